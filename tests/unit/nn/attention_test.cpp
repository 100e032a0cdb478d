// Block-wise attention (ops/attention.h) against a naive full-softmax f64 implementation (with an
// additive bias too, and its gradient, a sliding window, and attention sinks with their
// gradient), and
// the SelfAttention module's backward against f64 finite differences (MHA and GQA, rope on and
// off, interleaved and Llama-3-scaled rope, q/k layer norms, T not a multiple of the block,
// attention dropout replayed).
#include <gtest/gtest.h>

#include <cmath>

#include "backend_test.h"
#include "mt/backend.h"
#include "mt/kernels/rng.h"
#include "mt/nn/attention.h"
#include "nn_test_util.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::test::random_like;
using mt::test::random_weights;
using mt::test::values;
using mt::test::weights_tensor;

// out and lse by materialising each head's full Tq x Tk score matrix.
void naive_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     const mt::ops::AttentionConfig& cfg, std::vector<double>& out,
                     std::vector<double>& lse) {
    const int64_t B = q.size(0), T = q.size(1), nq = q.size(2), hd = q.size(3), ng = k.size(2);
    const int64_t Tk = k.size(1);
    const double* qp = q.data<double>();
    const double* kp = k.data<double>();
    const double* vp = v.data<double>();
    const auto drop = mt::k::Dropout::make(cfg.dropout, cfg.seed, cfg.offset);
    out.assign(q.numel(), 0.0);
    lse.assign(B * nq * T, 0.0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < nq; ++h) {
            const int64_t g = h / (nq / ng);
            for (int64_t t = 0; t < T; ++t) {
                std::vector<double> s(Tk, -INFINITY);
                double m = -INFINITY;
                for (int64_t j = 0; j < Tk; ++j) {
                    if (cfg.causal && j > t) continue;
                    if (cfg.window >= 0 && j < t - cfg.window) continue;
                    if (cfg.key_length.defined() && j >= cfg.key_length.data<int32_t>()[b])
                        continue;
                    double d = 0;
                    for (int64_t i = 0; i < hd; ++i)
                        d += qp[((b * T + t) * nq + h) * hd + i] *
                             kp[((b * Tk + j) * ng + g) * hd + i];
                    s[j] = cfg.scale * d;
                    if (cfg.bias.defined()) s[j] += cfg.bias.data<double>()[(h * T + t) * Tk + j];
                    m = std::max(m, s[j]);
                }
                const double sink = cfg.sink.defined() ? cfg.sink.data<double>()[h] : -INFINITY;
                m = std::max(m, sink);
                double z = std::exp(sink - m);
                for (int64_t j = 0; j < Tk; ++j) z += std::exp(s[j] - m);
                const int64_t row = (b * nq + h) * T + t;
                lse[row] = m + std::log(z);
                for (int64_t j = 0; j < Tk; ++j) {
                    double p = std::exp(s[j] - m) / z;
                    if (cfg.dropout > 0) p = drop.fwd(p, drop.keep(uint64_t(row * Tk + j)));
                    for (int64_t i = 0; i < hd; ++i)
                        out[((b * T + t) * nq + h) * hd + i] +=
                            p * vp[((b * Tk + j) * ng + g) * hd + i];
                }
            }
        }
}

void expect_near_all(const std::vector<double>& a, const std::vector<double>& b, double tol,
                     const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << "[" << i << "]";
}

class NnAttentionOp : public mt::test::BackendTest {};

TEST_P(NnAttentionOp, ForwardEqualsNaiveSoftmax) {
    std::mt19937 rng(11);
    struct Case {
        int64_t T, nq, ng, block;
        bool causal;
        float dropout;
        std::vector<int32_t> key_length = {};  // padding (BERT): keys past it are invisible
        int64_t Tk = 0;                        // keys of a cross-attention; 0: T
        bool bias = false;                     // an additive (nq, T, Tk) bias
        int64_t window = -1;                   // a sliding window (--window-size)
        bool sink = false;                     // a sink logit per head (--softmax-type)
    };
    for (Case c :
         {Case{7, 2, 2, 3, true, 0.0f}, Case{9, 4, 2, 4, true, 0.0f},
          Case{5, 4, 1, 64, false, 0.0f}, Case{8, 4, 2, 3, true, 0.3f},
          Case{7, 2, 1, 3, false, 0.0f, {4, 7}}, Case{6, 2, 2, 4, true, 0.2f, {2, 5}},
          // cross-attention: fewer and more keys than queries, padded, dropout
          Case{7, 2, 2, 3, false, 0.0f, {3, 5}, 5}, Case{4, 4, 4, 3, false, 0.3f, {9, 2}, 9},
          // T5's relative position bias: causal, padded, over more keys
          Case{7, 4, 2, 3, true, 0.0f, {}, 0, true}, Case{6, 2, 2, 4, false, 0.2f, {3, 6}, 0, true},
          Case{5, 2, 1, 2, false, 0.0f, {}, 8, true},
          // sliding windows: narrower than a block, wider, only the query itself; with dropout
          // and a bias
          Case{9, 4, 2, 4, true, 0.0f, {}, 0, false, 2},
          Case{11, 2, 1, 3, true, 0.0f, {}, 0, false, 5},
          Case{6, 2, 2, 4, true, 0.0f, {}, 0, false, 0},
          Case{10, 4, 2, 3, true, 0.3f, {}, 0, true, 3},
          // attention sinks: causal, padded bidirectional (a row with no key), windowed
          Case{7, 4, 2, 3, true, 0.0f, {}, 0, false, -1, true},
          Case{6, 2, 2, 4, false, 0.2f, {0, 5}, 0, false, -1, true},
          Case{9, 4, 2, 4, true, 0.0f, {}, 0, true, 2, true}}) {
        const int64_t Tk = c.Tk ? c.Tk : c.T;
        Tensor q = random_like({2, c.T, c.nq, 3}, DType::f64, rng, -2, 2);
        Tensor k = random_like({2, Tk, c.ng, 3}, DType::f64, rng, -2, 2);
        Tensor v = random_like({2, Tk, c.ng, 3}, DType::f64, rng);
        mt::ops::AttentionConfig cfg;
        cfg.scale = 1.0 / std::sqrt(3.0);
        cfg.causal = c.causal;
        cfg.block = c.block;
        cfg.dropout = c.dropout;
        cfg.window = c.window;
        cfg.seed = 5;
        cfg.offset = 17;
        if (!c.key_length.empty()) cfg.key_length = mt::host_tensor(c.key_length, {2});
        if (c.bias) cfg.bias = random_like({c.nq, c.T, Tk}, DType::f64, rng, -3, 3);
        if (c.sink) cfg.sink = random_like({c.nq}, DType::f64, rng, -2, 2);
        Tensor out = Tensor::empty(q.shape(), DType::f64);
        Tensor lse = Tensor::empty({2, c.nq, c.T}, DType::f64);
        be().attention_forward(q, k, v, cfg, out, lse);
        std::vector<double> want_out, want_lse;
        naive_attention(q, k, v, cfg, want_out, want_lse);
        expect_near_all(values(out), want_out, 1e-12, "out");
        expect_near_all(values(lse), want_lse, 1e-12, "lse");
    }
}

// Context parallelism's merge: attention over keys [0, c) merged with attention over keys
// [c, T) is attention over all keys, on the rows asked for only.
TEST_P(NnAttentionOp, MergeOfDisjointKeysEqualsAllKeys) {
    std::mt19937 rng(13);
    const int64_t B = 2, T = 6, nq = 4, ng = 2, hd = 3, c = 2;
    Tensor q = random_like({B, T, nq, hd}, DType::f64, rng, -2, 2);
    Tensor k = random_like({B, T, ng, hd}, DType::f64, rng, -2, 2);
    Tensor v = random_like({B, T, ng, hd}, DType::f64, rng);
    mt::ops::AttentionConfig cfg;
    cfg.scale = 0.7;
    cfg.causal = false;
    cfg.block = 4;
    Tensor out = Tensor::empty(q.shape(), DType::f64), lse = Tensor::empty({B, nq, T}, DType::f64);
    Tensor part = Tensor::empty(q.shape(), DType::f64);
    Tensor part_lse = Tensor::empty({B, nq, T}, DType::f64);
    mt::ops::AttentionConfig first = cfg, rest = cfg;
    first.key_length = mt::host_tensor(std::vector<int32_t>(B, int32_t(c)), {B});
    rest.document_start = mt::host_tensor(std::vector<int32_t>(B * T, int32_t(c)), {B, T});
    be().attention_forward(q, k, v, first, out, lse);
    be().attention_forward(q, k, v, rest, part, part_lse);
    const std::vector<double> first_out = values(out), first_lse = values(lse);
    be().attention_merge(out, lse, part, part_lse, 1, T);  // row 0 stays the first partial's

    std::vector<double> want_out, want_lse;
    naive_attention(q, k, v, cfg, want_out, want_lse);
    const std::vector<double> got_out = values(out), got_lse = values(lse);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < nq; ++h) {
                const size_t row = size_t((b * nq + h) * T + t);
                const auto& lse_want = t == 0 ? first_lse : want_lse;
                ASSERT_NEAR(got_lse[row], lse_want[row], 1e-12) << b << " " << t << " " << h;
                for (int64_t i = 0; i < hd; ++i) {
                    const size_t at = size_t(((b * T + t) * nq + h) * hd + i);
                    const auto& out_want = t == 0 ? first_out : want_out;
                    ASSERT_NEAR(got_out[at], out_want[at], 1e-12) << b << " " << t << " " << h;
                }
            }
}

// attention_backward's dq, dk and dv (and the bias's gradient when cfg has a bias) against
// finite differences of attention_forward, through random weights of its output.
void expect_attention_grads_match(mt::Backend& be, Tensor& q, Tensor& k, Tensor& v,
                                  const mt::ops::AttentionConfig& cfg, std::mt19937& rng) {
    Tensor out = Tensor::empty(q.shape(), DType::f64);
    Tensor lse = Tensor::empty({q.size(0), q.size(2), q.size(1)}, DType::f64);
    auto run = [&] {
        be.attention_forward(q, k, v, cfg, out, lse);
        return out.clone();
    };
    Tensor y = run();
    auto w = random_weights(y, rng);
    Tensor dq = Tensor::empty(q.shape(), DType::f64), dk = Tensor::empty(k.shape(), DType::f64),
           dv = Tensor::empty(v.shape(), DType::f64);
    mt::ops::AttentionConfig with_grad = cfg;
    std::vector<mt::test::GradTarget> targets = {{"q", q, dq}, {"k", k, dk}, {"v", v, dv}};
    if (cfg.bias.defined()) {
        with_grad.bias_grad = Tensor::zeros(cfg.bias.shape(), DType::f64);
        targets.push_back({"bias", cfg.bias, with_grad.bias_grad});
    }
    if (cfg.sink.defined()) {
        with_grad.sink_grad = Tensor::zeros(cfg.sink.shape(), DType::f64);
        targets.push_back({"sink", cfg.sink, with_grad.sink_grad});
    }
    be.attention_backward(q, k, v, out, lse, weights_tensor(y, w), with_grad, dq, dk, dv);
    mt::test::expect_grads_match(run, w, targets, 1e-6, 1e-8, 1e-6);
}

TEST_P(NnAttentionOp, BackwardMatchesFiniteDifferences) {
    std::mt19937 rng(12);
    for (float dropout : {0.0f, 0.2f, 0.1f, 0.15f}) {
        // 0.15: cross-attention of 6 queries over 9 keys, 7 of them tokens
        const int64_t Tk = dropout == 0.15f ? 9 : 6;
        Tensor q = random_like({1, 6, 4, 2}, DType::f64, rng, -2, 2);
        Tensor k = random_like({1, Tk, 2, 2}, DType::f64, rng, -2, 2);
        Tensor v = random_like({1, Tk, 2, 2}, DType::f64, rng);
        mt::ops::AttentionConfig cfg;
        if (dropout == 0.1f || dropout == 0.15f) {  // bidirectional over tokens and padding
            cfg.causal = false;
            cfg.key_length = mt::host_tensor(std::vector<int32_t>{int32_t(Tk - 2)}, {1});
        }
        cfg.scale = 0.7;
        cfg.block = 4;
        cfg.dropout = dropout;
        cfg.seed = 3;
        expect_attention_grads_match(be(), q, k, v, cfg, rng);
    }
}

// Sliding windows (0: only the query itself) and attention sinks (the sink's gradient summed over
// the batch and the queries): causal, windowed, bidirectional over padding, with dropout.
TEST_P(NnAttentionOp, WindowAndSinkGradientsMatchFiniteDifferences) {
    std::mt19937 rng(16);
    struct Case {
        int64_t window;
        float dropout;
        bool sink, padded;
    };
    for (const Case c :
         {Case{0, 0.0f, false, false}, Case{2, 0.2f, false, false}, Case{5, 0.0f, false, false},
          Case{-1, 0.0f, true, false}, Case{2, 0.0f, true, false}, Case{-1, 0.2f, true, true}}) {
        Tensor q = random_like({2, 9, 4, 2}, DType::f64, rng, -2, 2);
        Tensor k = random_like({2, 9, 2, 2}, DType::f64, rng, -2, 2);
        Tensor v = random_like({2, 9, 2, 2}, DType::f64, rng);
        mt::ops::AttentionConfig cfg;
        cfg.scale = 0.7;
        cfg.block = 4;
        cfg.window = c.window;
        cfg.dropout = c.dropout;
        cfg.seed = 4;
        if (c.sink) cfg.sink = random_like({4}, DType::f64, rng, -1, 1);
        if (c.padded) {
            cfg.causal = false;
            cfg.key_length = mt::host_tensor(std::vector<int32_t>{9, 4}, {2});
        }
        expect_attention_grads_match(be(), q, k, v, cfg, rng);
    }
}

// The bias's gradient sums the scores' gradients over the batch rows; q, k and v's see it too.
TEST_P(NnAttentionOp, BiasGradientMatchesFiniteDifferences) {
    std::mt19937 rng(14);
    for (bool causal : {true, false}) {
        const int64_t B = 2, T = 5, nq = 4, ng = 2;
        Tensor q = random_like({B, T, nq, 2}, DType::f64, rng, -2, 2);
        Tensor k = random_like({B, T, ng, 2}, DType::f64, rng, -2, 2);
        Tensor v = random_like({B, T, ng, 2}, DType::f64, rng);
        mt::ops::AttentionConfig cfg;
        cfg.causal = causal;
        if (!causal) cfg.key_length = mt::host_tensor(std::vector<int32_t>{T, T - 2}, {B});
        cfg.scale = 0.7;
        cfg.block = 2;
        cfg.bias = random_like({nq, T, T}, DType::f64, rng, -2, 2);
        expect_attention_grads_match(be(), q, k, v, cfg, rng);
    }
}

// Decoding over a cache with a bias gives the rows the whole sequence's attention gives.
TEST_P(NnAttentionOp, CachedWithBiasEqualsTheSequencesRows) {
    std::mt19937 rng(15);
    const int64_t B = 2, T = 6, nq = 4, ng = 2, hd = 3, past = 4;
    Tensor q = random_like({B, T, nq, hd}, DType::f64, rng, -2, 2);
    Tensor k = random_like({B, T, ng, hd}, DType::f64, rng, -2, 2);
    Tensor v = random_like({B, T, ng, hd}, DType::f64, rng);
    mt::ops::AttentionConfig cfg;
    cfg.scale = 0.6;
    cfg.block = 4;
    cfg.bias = random_like({nq, T, T}, DType::f64, rng, -2, 2);
    Tensor out = Tensor::empty(q.shape(), DType::f64), lse = Tensor::empty({B, nq, T}, DType::f64);
    be().attention_forward(q, k, v, cfg, out, lse);
    // Queries past .. T-1 over keys 0 .. T-1: the bias's rows past .., all its columns.
    Tensor bias_rows = cfg.bias.slice(1, past, T).contiguous();
    Tensor q_new = q.slice(1, past, T).contiguous();
    Tensor got = Tensor::empty(q_new.shape(), DType::f64);
    be().attention_cached(q_new, k, v, past, -1, cfg.scale, bias_rows, Tensor(), got);
    const std::vector<double> want = values(out.slice(1, past, T).contiguous());
    expect_near_all(values(got), want, 1e-12, "cached out");
}

// Prefill and decoding over a cache with a sliding window (and a sink) give the rows of the whole
// sequence's windowed attention.
TEST_P(NnAttentionOp, CachedSlidingWindowEqualsTheSequencesRows) {
    std::mt19937 rng(17);
    const int64_t B = 2, T = 9, nq = 4, ng = 2, hd = 3;
    Tensor q = random_like({B, T, nq, hd}, DType::f64, rng, -2, 2);
    Tensor k = random_like({B, T, ng, hd}, DType::f64, rng, -2, 2);
    Tensor v = random_like({B, T, ng, hd}, DType::f64, rng);
    for (int64_t window : {0, 3, 20}) {
        mt::ops::AttentionConfig cfg;
        cfg.scale = 0.6;
        cfg.block = 4;
        cfg.window = window;
        Tensor out = Tensor::empty(q.shape(), DType::f64);
        Tensor lse = Tensor::empty({B, nq, T}, DType::f64);
        cfg.sink = window == 3 ? random_like({nq}, DType::f64, rng, -1, 1) : Tensor();
        be().attention_forward(q, k, v, cfg, out, lse);
        for (int64_t past : {0, 4, 8}) {
            Tensor q_new = q.slice(1, past, T).contiguous();
            Tensor got = Tensor::empty(q_new.shape(), DType::f64);
            be().attention_cached(q_new, k, v, past, window, cfg.scale, Tensor(), cfg.sink, got);
            const std::vector<double> want = values(out.slice(1, past, T).contiguous());
            expect_near_all(values(got), want, 1e-12, "cached windowed out");
        }
    }
}

// SelfAttention in f64 with random weights; x (2, T, 8).
struct AttentionCase {
    int64_t T, nq, ng;
    bool rope;
    float dropout;
    bool bias;
    bool interleaved_scaled_rope = false;  // --rotary-interleaved, --use-rope-scaling
    bool qk_layernorm = false;
    mt::nn::SoftmaxType softmax = mt::nn::SoftmaxType::vanilla;
};

void check_attention_module(const AttentionCase& c, std::mt19937& rng) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig config;
    config.hidden_size = 8;
    config.num_attention_heads = c.nq;
    config.num_query_groups = c.ng;
    config.kv_channels = 4;
    config.rotary = c.rope;
    config.rotary_percent = 0.5f;
    if (c.interleaved_scaled_rope) {
        config.rotary_percent = 1.0f;
        config.rope = {0, 500000.0, 8.0, 2.0, true};
    }
    config.qk_layernorm = c.qk_layernorm;
    config.softmax_type = c.softmax;
    config.attention_dropout = c.dropout;
    config.attention_block = 3;
    config.add_bias_linear = c.bias;
    config.dtype = DType::f64;
    mt::nn::SelfAttention attn("decoder.layers.0.self_attention", config, *be);
    std::vector<mt::nn::Parameter*> params;
    attn.collect_parameters(params);
    for (auto* p : params) mt::test::fill_random(p->value, rng, -0.6, 0.6);
    if (c.softmax == mt::nn::SoftmaxType::learnable) {  // core_attention first, per head
        EXPECT_EQ(params[0]->name, "decoder.layers.0.self_attention.core_attention.softmax_offset");
        EXPECT_EQ(params[0]->value.shape(), mt::Shape({c.nq}));
        EXPECT_FALSE(params[0]->weight_decay);
        params.erase(params.begin());
        std::vector<mt::nn::Parameter*> all;
        attn.collect_parameters(all);
        Tensor x = random_like({2, c.T, 8}, DType::f64, rng);
        mt::test::expect_module_grads_match(attn, x, all, {true, 9, 100}, rng);
        return;
    }
    EXPECT_EQ(params[0]->name, "decoder.layers.0.self_attention.linear_qkv.weight");
    EXPECT_EQ(params[0]->value.shape(), mt::Shape({(c.nq + 2 * c.ng) * 4, 8}));
    if (c.qk_layernorm) {  // Megatron-core's order: after linear_qkv and linear_proj
        ASSERT_EQ(params.size(), 2u + 2 * c.bias + 4);
        EXPECT_EQ(params[params.size() - 4]->name,
                  "decoder.layers.0.self_attention.q_layernorm.weight");
        EXPECT_EQ(params.back()->name, "decoder.layers.0.self_attention.k_layernorm.bias");
        EXPECT_EQ(params.back()->value.shape(), mt::Shape({4}));
    }
    Tensor x = random_like({2, c.T, 8}, DType::f64, rng);
    mt::test::expect_module_grads_match(attn, x, params, {true, 9, 100}, rng);
}

// A windowed layer's KV state keeps only its window (and the position read), as a ring that
// grows for a step of several positions: prefill, decoding past the ring's end and a 3-token step
// give the rows of the whole sequence's windowed attention.
TEST(NnSelfAttention, SlidingWindowCacheIsARingOfTheWindow) {
    std::mt19937 rng(18);
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig config;
    config.hidden_size = 8;
    config.num_attention_heads = 4;
    config.num_query_groups = 2;
    config.kv_channels = 4;
    config.rotary = true;
    config.attention_block = 3;
    config.dtype = DType::f64;
    config.attention_window = 3;
    mt::nn::SelfAttention attn("decoder.layers.0.self_attention", config, *be);
    std::vector<mt::nn::Parameter*> params;
    attn.collect_parameters(params);
    for (auto* p : params) mt::test::fill_random(p->value, rng, -0.6, 0.6);
    const int64_t B = 2, T = 14;
    Tensor x = random_like({B, T, 8}, DType::f64, rng);
    mt::nn::DropoutContext no_dropout{false, 0, 0};
    const std::vector<double> whole = values(attn.forward(x, no_dropout, nullptr));

    auto state = attn.make_state(B, T);
    EXPECT_EQ(state->k.size(1), 4);  // the window and the position read, not T
    std::vector<double> got;
    for (auto [from, to] :
         {std::pair{0, 6}, {6, 7}, {7, 8}, {8, 9}, {9, 10}, {10, 11}, std::pair{11, 14}}) {
        Tensor part = x.slice(1, from, to).contiguous();
        const Tensor y = attn.forward(part, no_dropout, nullptr, {}, {state.get(), from});
        for (int64_t b = 0; b < B; ++b) {
            const std::vector<double> rows = values(y.slice(0, b, b + 1).contiguous());
            for (size_t i = 0; i < rows.size(); ++i)
                ASSERT_NEAR(rows[i], whole[size_t((b * T + from) * 8) + i], 1e-12)
                    << "positions " << from << ".." << to << " row " << b;
        }
    }
    EXPECT_EQ(state->k.size(1), 6);  // grown for the 3-token step: the window and the three
}

// A bf16 KV cache (a --bf16 model's decoding) is read as it is: the outputs of its f32 widening,
// bit for bit, with f32 queries; with bf16 queries and output, those rounded.
TEST_P(NnAttentionOp, Bf16CacheGivesItsWideningsOutputs) {
    std::mt19937 rng(16);
    const int64_t B = 2, C = 9, Tq = 2, nq = 4, ng = 2, hd = 24, past = 5;
    auto bf16_and_f32 = [&](const mt::Shape& shape) {
        Tensor narrow = Tensor::empty(shape, DType::bf16), wide = Tensor::empty(shape, DType::f32);
        be().cast(random_like(shape, DType::f32, rng, -2, 2), narrow);
        be().cast(narrow, wide);
        return std::pair{narrow, wide};
    };
    const auto [k16, k] = bf16_and_f32({B, C, ng, hd});
    const auto [v16, v] = bf16_and_f32({B, C, ng, hd});
    const auto [q16, q] = bf16_and_f32({B, Tq, nq, hd});
    Tensor bias = random_like({nq, Tq, past + Tq}, DType::f32, rng);
    Tensor want = Tensor::empty(q.shape(), DType::f32), got = Tensor::empty(q.shape(), DType::f32);
    be().attention_cached(q, k, v, past, -1, 0.35, bias, Tensor(), want);
    be().attention_cached(q, k16, v16, past, -1, 0.35, bias, Tensor(), got);
    EXPECT_EQ(values(got), values(want));
    Tensor got16 = Tensor::empty(q.shape(), DType::bf16), want16 = got16.clone();
    be().attention_cached(q16, k16, v16, past, -1, 0.35, bias, Tensor(), got16);
    be().cast(want, want16);
    Tensor got_wide = Tensor::empty(q.shape(), DType::f32), want_wide = got_wide.clone();
    be().cast(got16, got_wide);
    be().cast(want16, want_wide);
    EXPECT_EQ(values(got_wide), values(want_wide));
}

TEST(NnSelfAttention, MultiHeadGradients) {
    std::mt19937 rng(13);
    check_attention_module({5, 2, 2, false, 0.0f, true}, rng);
}

TEST(NnSelfAttention, GroupedQueryRopeGradients) {
    std::mt19937 rng(14);
    check_attention_module({7, 4, 2, true, 0.0f, false}, rng);
}

TEST(NnSelfAttention, InterleavedScaledRopeAndQkNormGradients) {
    std::mt19937 rng(16);
    check_attention_module({6, 4, 2, true, 0.0f, true, true, true}, rng);
    check_attention_module({5, 2, 1, false, 0.0f, false, false, true}, rng);
}

// --softmax-type learnable (GPT-OSS's attention sinks) and off-by-one.
TEST(NnSelfAttention, AttentionSinkGradients) {
    std::mt19937 rng(20);
    AttentionCase learnable{6, 4, 2, true, 0.0f, false};
    learnable.softmax = mt::nn::SoftmaxType::learnable;
    check_attention_module(learnable, rng);
    AttentionCase off_by_one{5, 2, 1, false, 0.1f, true};
    off_by_one.softmax = mt::nn::SoftmaxType::off_by_one;
    check_attention_module(off_by_one, rng);
}

TEST(NnSelfAttention, DropoutReplayedGradients) {
    std::mt19937 rng(15);
    check_attention_module({4, 4, 2, true, 0.25f, true}, rng);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(NnAttentionOp);
