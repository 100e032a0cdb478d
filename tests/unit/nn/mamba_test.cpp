// The Mamba-2 mixer as a layer's sublayer: backward against f64 finite differences (with hidden
// dropout replayed, and with selective recompute of the norm), decoding over the inference state
// (prefill, then one token at a time) equal to the whole sequence at once, a hybrid stack of
// Mamba, attention-only and MLP-only layers decoding the same way, Megatron-core's parameter
// names and order, and Megatron's initialisation ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "mt/backend.h"
#include "mt/nn/attention.h"
#include "mt/nn/initialization.h"
#include "mt/nn/mamba_mixer.h"
#include "mt/nn/transformer_block.h"
#include "mt/nn/transformer_layer.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::test::random_like;
using mt::test::values;

mt::nn::TransformerConfig mamba_config(DType dtype = DType::f64) {
    mt::nn::TransformerConfig c;
    c.hidden_size = 8;
    c.ffn_hidden_size = 12;
    c.num_attention_heads = 2;
    c.num_query_groups = 1;
    c.normalization = mt::nn::NormKind::rms_norm;
    c.activation = mt::ops::UnaryOp::silu;
    c.gated_linear_unit = true;
    c.add_bias_linear = false;
    c.attention_block = 4;
    c.mamba.state_dim = 3;
    c.mamba.head_dim = 4;  // 4 heads of 4 (d_inner 16)
    c.mamba.num_groups = 2;
    c.dtype = dtype;
    return c;
}

mt::nn::LayerSpec mamba_layer() {
    return {{mt::nn::mamba_sublayer()}};
}

TEST(NnMamba, GradientsMatchFiniteDifferences) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(5);
    for (bool recompute_norms : {false, true}) {
        mt::nn::TransformerConfig c = mamba_config();
        c.hidden_dropout = 0.2f;
        c.recompute_norms = recompute_norms;
        mt::nn::TransformerLayer layer("decoder.layers.1", c, mamba_layer(), *be);
        auto params = mt::test::random_parameters(layer, rng);
        Tensor x = random_like({2, 9, 8}, DType::f64, rng);
        mt::test::expect_module_grads_match(layer, x, params, {true, 31, 0}, rng);
    }
}

// The scan op alone over 140 positions: it runs in chunks of 64, so chunk boundaries are
// crossed (the state's gradient flows back across two), the last chunk partial; six heads in one
// group, which the op takes in blocks of four and two whose parts of the group gradients it sums.
// (The layer check above is short: finite differences of a sum over many outputs lose the precision
// its tolerance needs.)
TEST(NnMamba, ScanBackwardAcrossChunks) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(12);
    const int64_t B = 1, T = 140, nh = 6, hp = 2, ng = 1, N = 2;
    Tensor x = random_like({B, T, nh, hp}, DType::f64, rng);
    Tensor dt = random_like({B, T, nh}, DType::f64, rng);
    Tensor bm = random_like({B, T, ng, N}, DType::f64, rng);
    Tensor cm = random_like({B, T, ng, N}, DType::f64, rng);
    Tensor dt_bias = random_like({nh}, DType::f64, rng);
    Tensor a_log = random_like({nh}, DType::f64, rng, 0.0, 1.0);
    Tensor d = random_like({nh}, DType::f64, rng);
    auto forward = [&] {
        Tensor y = be->empty(x.shape(), DType::f64), no_state;
        be->ssm_scan_forward(x, dt, dt_bias, a_log, bm, cm, d, y, no_state);
        return y;
    };
    const Tensor y = forward();
    const std::vector<double> w = mt::test::random_weights(y, rng);
    Tensor dx = be->empty(x.shape(), DType::f64), ddt = be->empty(dt.shape(), DType::f64);
    Tensor db = be->empty(bm.shape(), DType::f64), dc = be->empty(cm.shape(), DType::f64);
    Tensor ddt_bias = be->zeros({nh}, DType::f64), da_log = be->zeros({nh}, DType::f64),
           dd = be->zeros({nh}, DType::f64);
    be->ssm_scan_backward(x, dt, dt_bias, a_log, bm, cm, d, mt::test::weights_tensor(y, w), dx, ddt,
                          db, dc, ddt_bias, da_log, dd);
    mt::test::expect_grads_match(forward, w,
                                 {{"x", x, dx},
                                  {"dt", dt, ddt},
                                  {"B", bm, db},
                                  {"C", cm, dc},
                                  {"dt_bias", dt_bias, ddt_bias},
                                  {"A_log", a_log, da_log},
                                  {"D", d, dd}},
                                 1e-6, 1e-7, 1e-6);
}

// A sequence runs in chunks on GEMMs, one position (decoding) as the recurrent step: from the
// same state, 150 steps of one give the chunked outputs and final state (two groups of six heads:
// blocks of four and two). f64 to rounding, and f32 (OpenBLAS and the step's instruction-set
// build) to f32's.
TEST(NnMamba, ChunkedScanEqualsTheRecurrentStep) {
    auto be = mt::make_cpu_backend();
    for (DType dtype : {DType::f64, DType::f32}) {
        std::mt19937 rng(21);
        const int64_t B = 2, T = 150, nh = 12, hp = 8, ng = 2, N = 16;
        Tensor x = random_like({B, T, nh, hp}, dtype, rng);
        Tensor dt = random_like({B, T, nh}, dtype, rng);
        Tensor bm = random_like({B, T, ng, N}, dtype, rng);
        Tensor cm = random_like({B, T, ng, N}, dtype, rng);
        Tensor dt_bias = random_like({nh}, dtype, rng);
        Tensor a_log = random_like({nh}, dtype, rng, 0.0, 1.0);
        Tensor d = random_like({nh}, dtype, rng);
        const Tensor start = random_like({B, nh, hp, N}, dtype, rng);
        Tensor chunked_state = be->contiguous(start.clone());
        Tensor y = be->empty(x.shape(), dtype);
        be->ssm_scan_forward(x, dt, dt_bias, a_log, bm, cm, d, y, chunked_state);
        Tensor step_state = be->contiguous(start.clone());
        const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
        const std::vector<double> whole = values(y);
        for (int64_t t = 0; t < T; ++t) {
            auto at = [&](const Tensor& v) { return be->contiguous(v.slice(1, t, t + 1)); };
            Tensor yt = be->empty({B, 1, nh, hp}, dtype);
            be->ssm_scan_forward(at(x), at(dt), dt_bias, a_log, at(bm), at(cm), d, yt, step_state);
            const std::vector<double> step = values(yt);
            for (int64_t b = 0; b < B; ++b)
                for (int64_t i = 0; i < nh * hp; ++i) {
                    const double want = whole[size_t((b * T + t) * nh * hp + i)];
                    ASSERT_NEAR(step[size_t(b * nh * hp + i)], want, tol * (1 + std::abs(want)))
                        << mt::dtype_name(dtype) << " row " << b << " position " << t;
                }
        }
        const std::vector<double> s1 = values(chunked_state), s2 = values(step_state);
        for (size_t i = 0; i < s1.size(); ++i)
            ASSERT_NEAR(s1[i], s2[i], tol * (1 + std::abs(s2[i]))) << mt::dtype_name(dtype) << i;
    }
}

// Runs `forward(part, state, past)` over x (B, T, H) in the pieces `cuts` says, returning the
// outputs concatenated along T.
template <class Forward>
std::vector<double> in_pieces(const Tensor& x, const std::vector<int64_t>& cuts, Forward forward) {
    const int64_t B = x.size(0), T = x.size(1), H = x.size(2);
    std::vector<double> out(size_t(B * T * H));
    int64_t begin = 0;
    for (int64_t end : cuts) {
        const Tensor y = forward(x.slice(1, begin, end).contiguous(), begin);
        const std::vector<double> v = values(y);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = begin; t < end; ++t)
                for (int64_t h = 0; h < H; ++h)
                    out[size_t((b * T + t) * H + h)] =
                        v[size_t((b * (end - begin) + t - begin) * H + h)];
        begin = end;
    }
    return out;
}

TEST(NnMamba, DecodingWithTheStateEqualsTheWholeSequence) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(8);
    mt::nn::TransformerLayer layer("decoder.layers.0", mamba_config(), mamba_layer(), *be);
    mt::test::random_parameters(layer, rng);
    const Tensor x = random_like({2, 9, 8}, DType::f64, rng);
    mt::nn::DropoutContext none{false};
    const std::vector<double> whole = values(layer.forward(x, none, nullptr));
    for (int round = 0; round < 2; ++round) {  // the second reuses the state from position 0
        auto states = layer.make_states(2, 9);
        const auto pieces = in_pieces(x, {5, 6, 7, 8, 9}, [&](const Tensor& part, int64_t past) {
            return layer.forward(part, none, nullptr, {}, &states, past);
        });
        ASSERT_EQ(pieces.size(), whole.size());
        for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(pieces[i], whole[i], 1e-12) << i;
    }
}

// A Mamba layer's inference state is its convolution window and SSM state: the same size for
// 1k and 8k positions (an attention layer's grows with them).
TEST(NnMamba, StateMemoryIsFlatInTheContextLength) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerLayer mamba("decoder.layers.0", mamba_config(DType::f32), mamba_layer(),
                                   *be);
    mt::nn::TransformerLayer attention("decoder.layers.1", mamba_config(DType::f32),
                                       {{mt::nn::self_attention_sublayer()}}, *be);
    auto numel = [](mt::nn::InferenceState::LayerStates states) {
        int64_t n = 0;
        for (const auto& s : states) {
            if (auto* m = dynamic_cast<mt::nn::MambaState*>(s.get()))
                n += m->conv.numel() + m->ssm.numel();
            if (auto* kv = dynamic_cast<mt::nn::KvState*>(s.get()))
                n += kv->k.numel() + kv->v.numel();
        }
        return n;
    };
    EXPECT_EQ(numel(mamba.make_states(2, 1024)), numel(mamba.make_states(2, 8192)));
    EXPECT_EQ(numel(mamba.make_states(2, 1024)), 2 * (3 * 28 + 4 * 4 * 3));
    EXPECT_EQ(numel(attention.make_states(2, 8192)), 8 * numel(attention.make_states(2, 1024)));
}

TEST(NnMamba, HybridStackDecodesAsItReadsWholeSequences) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(9);
    // Megatron's "M*-M": Mamba, attention only, MLP only, Mamba.
    const mt::nn::LayerSpecs specs = [](int64_t i) {
        if (i == 1) return mt::nn::LayerSpec{{mt::nn::self_attention_sublayer()}};
        if (i == 2) return mt::nn::LayerSpec{{mt::nn::dense_mlp_sublayer()}};
        return mamba_layer();
    };
    mt::nn::TransformerBlock block("decoder", 4, mamba_config(), specs, {}, *be);
    mt::test::random_parameters(block, rng);
    const Tensor x = random_like({2, 7, 8}, DType::f64, rng);
    const std::vector<double> whole = values(block.forward_cached(x, nullptr));
    auto state = block.make_inference_state(2, 7);
    const auto pieces = in_pieces(x, {4, 5, 6, 7}, [&](const Tensor& part, int64_t) {
        Tensor y = block.forward_cached(part, state.get());
        state->advance(part.size(1));
        return y;
    });
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(pieces[i], whole[i], 1e-12) << i;
}

std::vector<std::string> names(mt::nn::TransformerLayer& layer) {
    std::vector<mt::nn::Parameter*> params;
    layer.collect_parameters(params);
    std::vector<std::string> out;
    for (auto* p : params) out.push_back(p->name);
    return out;
}

TEST(NnMamba, ParametersInMegatronCoresOrderAndShapes) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig c = mamba_config(DType::f32);
    mt::nn::TransformerLayer te("decoder.layers.3", c, mamba_layer(), *be);
    const std::string m = "decoder.layers.3.mixer.";
    EXPECT_EQ(names(te), (std::vector<std::string>{
                             m + "in_proj.layer_norm_weight", m + "in_proj.weight",
                             m + "conv1d.weight", m + "conv1d.bias", m + "dt_bias", m + "A_log",
                             m + "D", m + "norm.weight", m + "out_proj.weight"}));
    c.norm_naming = mt::nn::NormNaming::local;
    mt::nn::TransformerLayer local("decoder.layers.3", c, mamba_layer(), *be);
    EXPECT_EQ(names(local).front(), "decoder.layers.3.norm.weight");
    std::vector<mt::nn::Parameter*> params;
    te.collect_parameters(params);
    // in_proj: 2 di + 2 ng N + nh = 32 + 12 + 4 rows; the convolution over x, B and C.
    EXPECT_EQ(params[1]->value.shape(), (mt::Shape{48, 8}));
    EXPECT_EQ(params[2]->value.shape(), (mt::Shape{28, 1, 4}));
    EXPECT_EQ(params[7]->value.shape(), (mt::Shape{16}));
    EXPECT_EQ(params[8]->value.shape(), (mt::Shape{8, 16}));
    for (size_t i : {4, 5, 6}) EXPECT_FALSE(params[i]->weight_decay) << params[i]->name;
}

TEST(NnMamba, InitialisedAsMegatronDoes) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerLayer layer("decoder.layers.0", mamba_config(DType::f32), mamba_layer(),
                                   *be);
    std::vector<mt::nn::Parameter*> params;
    layer.collect_parameters(params);
    mt::nn::initialize_megatron(*be, params, {7, 0.02, 4, false});
    auto all = [&](size_t i, auto pred) {
        for (double v : values(params[i]->value))
            EXPECT_TRUE(pred(v)) << params[i]->name << " " << v;
    };
    all(2, [](double v) { return std::abs(v) <= 0.5 && v != 0; });  // conv: 1 / sqrt(4)
    all(3, [](double v) { return std::abs(v) <= 0.5 && v != 0; });
    all(4, [](double v) {  // softplus(dt_bias) in [0.001, 0.1]
        const double dt = std::log1p(std::exp(v));
        return dt >= 0.001 * (1 - 1e-5) && dt <= 0.1 * (1 + 1e-5);
    });
    all(5, [](double v) { return v >= 0 && v <= std::log(16.0) + 1e-6; });
    all(6, [](double v) { return v == 1; });
    all(7, [](double v) { return v == 1; });
}

}  // namespace

namespace {

// tests/fixtures/mamba/mixer_reference.txt: "<name> <dims...>" then the values, per tensor.
std::map<std::string, std::pair<mt::Shape, std::vector<double>>> read_reference() {
    std::ifstream in(mt::test::fixtures_dir() / "mamba" / "mixer_reference.txt");
    EXPECT_TRUE(in) << "missing tests/fixtures/mamba/mixer_reference.txt";
    std::map<std::string, std::pair<mt::Shape, std::vector<double>>> out;
    std::string header, data;
    while (std::getline(in, header) && std::getline(in, data)) {
        std::istringstream h(header), d(data);
        std::string name;
        h >> name;
        mt::Shape shape;
        for (int64_t dim; h >> dim;) shape.push_back(dim);
        std::vector<double> v;
        for (double x; d >> x;) v.push_back(x);
        out[name] = {shape, v};
    }
    return out;
}

// transformers' Mamba2Mixer (the chunked torch path, tests/fixtures/mamba/make_mixer_fixture.py)
// on its random weights: the same output.
TEST(NnMamba, MixerEqualsTransformersMamba2) {
    const auto ref = read_reference();
    ASSERT_TRUE(ref.count("output"));
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig c = mamba_config();
    c.mamba.num_heads = 4;
    mt::nn::MambaMixer mixer("decoder.layers.0", c, *be);
    std::vector<mt::nn::Parameter*> params;
    mixer.collect_parameters(params, nullptr);
    ASSERT_EQ(params.size(), 8u);
    for (mt::nn::Parameter* p : params) {
        const std::string key = p->name.substr(std::string("decoder.layers.0.").size());
        ASSERT_TRUE(ref.count(key)) << key;
        const auto& [shape, v] = ref.at(key);
        ASSERT_EQ(p->value.shape(), shape) << key;
        std::copy(v.begin(), v.end(), p->value.data<double>());
    }
    const auto& [in_shape, in] = ref.at("input");
    const Tensor x = mt::host_tensor(in, in_shape);
    const std::vector<double> y = values(mixer.forward(x, nullptr));
    const std::vector<double>& expected = ref.at("output").second;
    ASSERT_EQ(y.size(), expected.size());
    // transformers' torch path rounds A = -exp(A_log) and the gated norm to f32 even in f64.
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 2e-6 * (1 + std::abs(expected[i]))) << i;
}

}  // namespace

namespace {

// A bf16 mixer computes between its projections in f32: its output is the f32 layer's to bf16
// precision, and its small parameters' grads (f32, Megatron's main grads) follow the f32 ones.
TEST(NnMamba, Bf16FollowsF32) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(3);
    mt::nn::TransformerLayer f32("decoder.layers.0", mamba_config(DType::f32), mamba_layer(), *be);
    mt::nn::TransformerLayer bf16("decoder.layers.0", mamba_config(DType::bf16), mamba_layer(),
                                  *be);
    std::vector<mt::nn::Parameter*> p32, p16;
    f32.collect_parameters(p32);
    bf16.collect_parameters(p16);
    for (size_t i = 0; i < p32.size(); ++i) {
        mt::test::fill_random(p32[i]->value, rng, -0.5, 0.5);
        be->cast(p32[i]->value, p16[i]->value);  // bf16 values
        be->cast(p16[i]->value, p32[i]->value);  // and the f32 model on the same grid
    }
    const Tensor x32 = random_like({2, 9, 8}, DType::f32, rng);
    Tensor x16 = be->empty(x32.shape(), DType::bf16);
    be->cast(x32, x16);
    mt::nn::DropoutContext none{false};
    mt::nn::TransformerLayer::Saved s32, s16;
    const Tensor y32 = f32.forward(x32, none, &s32);
    const Tensor y16 = bf16.forward(x16, none, &s16);
    Tensor y16f = be->empty(y16.shape(), DType::f32);
    be->cast(y16, y16f);
    const std::vector<double> a = values(y32), b = values(y16f);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 0.03 * (1 + std::abs(a[i])));
    mt::test::zero_grads(p32);
    mt::test::zero_grads(p16);
    Tensor ones32 = be->empty(y32.shape(), DType::f32),
           ones16 = be->empty(y16.shape(), DType::bf16);
    be->fill(ones32, 1.0);
    be->fill(ones16, 1.0);
    f32.backward(ones32, s32);
    bf16.backward(ones16, s16);
    for (size_t i = 0; i < p32.size(); ++i) {
        ASSERT_EQ(p16[i]->grad.dtype(), DType::f32) << p16[i]->name;
        const std::vector<double> g32 = values(p32[i]->grad), g16 = values(p16[i]->grad);
        double scale = 0;
        for (double g : g32) scale = std::max(scale, std::abs(g));
        for (size_t j = 0; j < g32.size(); ++j)
            EXPECT_NEAR(g16[j], g32[j], 0.05 * scale + 1e-3) << p16[i]->name << " " << j;
    }
}

}  // namespace
