// CPU attention at GEMM speed: one OpenMP task per (batch, head, query block) in the forward,
// per (batch, key/value group) in the backward (so the group's dk and dv have one writer). A
// query block's scores against the keys it may see sit in a per-thread block x Tk scratch (no
// Tq x Tk matrix), every product is a single-threaded BLAS call on the tensors' own strides, and
// the softmax, masks and dropout run on the block's rows in between.
#include "cpu_backend.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "blas_calls.h"
#include "half_as_float.h"
#include "lane_dot.h"
#include "mt/kernels/rng.h"
#include "op_support.h"
#include "philox_vector.h"
#include "vector_exp.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// Tq queries, Tk keys: equal for self-attention, the encoder's length for cross-attention.
struct Dims {
    int64_t B, Tq, Tk, nq, ng, hd;
    const int32_t* document_start;  // (B, T), or null: no per-document limit
    const int32_t* key_length;      // (B), or null: no padding
    bool bias;                      // config.bias (nq, Tq, Tk) is added to the scores
    bool sink;                      // config.sink (nq) joins each row's softmax
};

Dims check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
               const AttentionConfig& config) {
    check_float(op, "q", q);
    MT_CHECK(q.dim() == 4, op, ": q must be (B, T, nq, hd), got ", q.describe());
    check_float(op, "k", k);
    MT_CHECK(k.dim() == 4 && k.size(0) == q.size(0) && k.size(3) == q.size(3) && k.size(2) > 0 &&
                 q.size(2) % k.size(2) == 0,
             op, ": k must be (B, Tk, ng, hd) with ng dividing nq for q ", q.describe(), ", got ",
             k.describe());
    MT_CHECK(k.size(1) == q.size(1) || (!config.causal && !config.document_start.defined()), op,
             ": a causal or per-document mask needs as many keys as queries; q ", q.describe(),
             ", k ", k.describe());
    check_float_shape(op, "k", k, k.shape(), q.dtype());
    check_float_shape(op, "v", v, k.shape(), q.dtype());
    MT_CHECK(config.block > 0, op, ": block must be > 0, got ", config.block);
    MT_CHECK(config.window < 0 || config.causal, op,
             ": a sliding window is for causal attention, window ", config.window);
    MT_CHECK(config.dropout >= 0.0f && config.dropout < 1.0f, op,
             ": dropout must be in [0, 1), got ", config.dropout);
    const Tensor& starts = config.document_start;
    if (starts.defined())
        MT_CHECK(starts.dtype() == DType::i32 && starts.is_contiguous() &&
                     starts.device().type == DeviceType::cpu &&
                     starts.shape() == Shape({q.size(0), q.size(1)}),
                 op, ": document_start must be a contiguous i32 (B, T) CPU tensor, got ",
                 starts.describe());
    const Tensor& lengths = config.key_length;
    if (lengths.defined())
        MT_CHECK(
            lengths.dtype() == DType::i32 && lengths.is_contiguous() &&
                lengths.device().type == DeviceType::cpu && lengths.shape() == Shape({q.size(0)}),
            op, ": key_length must be a contiguous i32 (B) CPU tensor, got ", lengths.describe());
    for (const auto& [t, name] :
         {std::pair{&config.bias, "bias"}, {&config.bias_grad, "bias_grad"}})
        if (t->defined()) {
            MT_CHECK(t->is_contiguous(), op, ": ", name, " must be contiguous, got ",
                     t->describe());
            check_float_shape(op, name, *t, {q.size(2), q.size(1), k.size(1)}, q.dtype());
        }
    MT_CHECK(!config.bias_grad.defined() || config.bias.defined(), op,
             ": bias_grad without a bias");
    for (const auto& [t, name] :
         {std::pair{&config.sink, "sink"}, {&config.sink_grad, "sink_grad"}})
        if (t->defined()) {
            MT_CHECK(t->is_contiguous(), op, ": ", name, " must be contiguous, got ",
                     t->describe());
            check_float_shape(op, name, *t, {q.size(2)}, q.dtype());
        }
    MT_CHECK(!config.sink_grad.defined() || config.sink.defined(), op,
             ": sink_grad without a sink");
    return {q.size(0),
            q.size(1),
            k.size(1),
            q.size(2),
            k.size(2),
            q.size(3),
            starts.defined() ? starts.data<int32_t>() : nullptr,
            lengths.defined() ? lengths.data<int32_t>() : nullptr,
            config.bias.defined(),
            config.sink.defined()};
}

// Row offsets of (b, t, head h) in q-shaped (B, Tq, nq, hd) and of (b, s, group g) in k-shaped
// (B, Tk, ng, hd) tensors.
inline int64_t at_q(const Dims& d, int64_t b, int64_t t, int64_t h) {
    return ((b * d.Tq + t) * d.nq + h) * d.hd;
}
inline int64_t at_kv(const Dims& d, int64_t b, int64_t s, int64_t g) {
    return ((b * d.Tk + s) * d.ng + g) * d.hd;
}

// The keys [first, end) query t of batch row b sees: causal and padding limit the end (s <= t,
// s < key_length), the document start and a sliding window (s >= t - window) the beginning;
// `keys` is how many the block computed scores for.
struct KeyRange {
    int64_t first, end;
};
inline KeyRange visible_keys(const AttentionConfig& cfg, const Dims& d, int64_t b, int64_t t,
                             int64_t keys) {
    int64_t end = cfg.causal ? std::min(keys, t + 1) : keys;
    if (d.key_length) end = std::clamp<int64_t>(d.key_length[b], 0, end);
    int64_t first = d.document_start ? d.document_start[b * d.Tq + t] : 0;
    if (cfg.window >= 0) first = std::max(first, t - cfg.window);
    return {std::min(first, end), end};
}

// One query block of one head: `rows` queries from t0 against the keys [0, keys) they may see
// (all of them, or up to the block's last query when causal), scores in a rows x keys scratch.
struct QueryBlock {
    int64_t b, h, g, t0, rows, keys;
};

QueryBlock query_block(const Dims& d, const AttentionConfig& cfg, int64_t b, int64_t h,
                       int64_t t0) {
    const int64_t rows = std::min(cfg.block, d.Tq - t0);
    return {b, h, h / (d.nq / d.ng), t0, rows, cfg.causal ? t0 + rows : d.Tk};
}

// P (rows x keys, in place over the scores S = scale q k^T) = exp(S - lse) on each row's visible
// keys, 0 elsewhere. With `lse` null the rows' log-sum-exps are computed first and stored in
// `lse_out` (forward); otherwise they are read (backward recomputation).
template <class T>
void probabilities(const Dims& d, const AttentionConfig& cfg, const QueryBlock& qb, T* p,
                   const T* lse, T* lse_out) {
    for (int64_t r = 0; r < qb.rows; ++r) {
        T* pr = p + r * qb.keys;
        const auto [first, end] = visible_keys(cfg, d, qb.b, qb.t0 + r, qb.keys);
        T row_lse;
        if (lse) {
            row_lse = lse[(qb.b * d.nq + qb.h) * d.Tq + qb.t0 + r];
        } else {
            // A sink joins the row as one more logit (so a row without keys has its lse).
            const T sink = d.sink ? in_t<T>(cfg.sink)[qb.h] : k::neg_inf<T>();
            const T m = std::max(lane_max(pr + first, end - first, k::neg_inf<T>()), sink);
            T l = d.sink ? k::exp(sink - m) : T(0);
            if constexpr (std::is_same_v<T, float>)
                l += sum_exp_shifted(pr + first, -m, end - first);
            else
                for (int64_t j = first; j < end; ++j) l += k::exp(pr[j] - m);
            row_lse = first < end || d.sink ? m + k::log(l) : k::neg_inf<T>();
            lse_out[(qb.b * d.nq + qb.h) * d.Tq + qb.t0 + r] = row_lse;
        }
        std::fill(pr, pr + first, T(0));
        if constexpr (std::is_same_v<T, float>)
            exp_shifted(pr + first, -row_lse, pr + first, end - first);
        else
            for (int64_t j = first; j < end; ++j) pr[j] = k::exp(pr[j] - row_lse);
        std::fill(pr + end, pr + qb.keys, T(0));
    }
}

// Adds the block's rows of the bias (nq, Tq, Tk) to its scores.
template <class T>
void add_bias(const Dims& d, const QueryBlock& qb, const T* bias, T* s) {
    for (int64_t r = 0; r < qb.rows; ++r) {
        const T* br = bias + (qb.h * d.Tq + qb.t0 + r) * d.Tk;
        T* sr = s + r * qb.keys;
        for (int64_t j = 0; j < qb.keys; ++j) sr[j] += br[j];
    }
}

// The dropout counter of score (row r, key 0) of a query block.
inline uint64_t counter0(const Dims& d, const QueryBlock& qb, int64_t r) {
    return uint64_t(((qb.b * d.nq + qb.h) * d.Tq + qb.t0 + r) * d.Tk);
}

// Forward of one query block: S = scale q k^T, P = softmax(S) on the visible keys (lse kept),
// dropout, out = P v; the products are BLAS calls on the (B, T, heads, hd) layouts' strides.
template <class T>
void forward_block(const Dims& d, const AttentionConfig& cfg, const QueryBlock& qb, const T* q,
                   const T* k, const T* v, T* out, T* lse, T* p, std::vector<uint32_t>& words) {
    const int64_t hd = d.hd, ldq = d.nq * hd, ldkv = d.ng * hd;
    const T* qrows = q + at_q(d, qb.b, qb.t0, qb.h);
    blas_gemm(false, true, qb.rows, qb.keys, hd, T(cfg.scale), qrows, ldq,
              k + at_kv(d, qb.b, 0, qb.g), ldkv, T(0), p, qb.keys);
    if (d.bias) add_bias(d, qb, in_t<T>(cfg.bias), p);
    probabilities(d, cfg, qb, p, static_cast<const T*>(nullptr), lse);
    if (cfg.dropout > 0.0f) {  // p = 0 keeps all: no bits to draw
        const k::Dropout drop = k::Dropout::make(cfg.dropout, cfg.seed, cfg.offset);
        const uint32_t threshold = drop.keep_threshold();
        for (int64_t r = 0; r < qb.rows; ++r) {
            T* pr = p + r * qb.keys;
            const uint32_t* bits =
                counter_words(cfg.seed, cfg.offset + counter0(d, qb, r), qb.keys, words);
            for (int64_t j = 0; j < qb.keys; ++j) pr[j] = drop.masked(pr[j], bits[j], threshold);
        }
    }
    blas_gemm(false, false, qb.rows, hd, qb.keys, T(1), p, qb.keys, v + at_kv(d, qb.b, 0, qb.g),
              ldkv, T(0), out + at_q(d, qb.b, qb.t0, qb.h), ldq);
}

template <class T>
void forward_blocks(const Dims& d, const AttentionConfig& cfg, const T* q, const T* k, const T* v,
                    T* out, T* lse) {
    const int64_t q_blocks = (d.Tq + cfg.block - 1) / cfg.block;
    const int64_t tasks = d.B * d.nq * q_blocks;
#pragma omp parallel if (d.B * d.nq * d.Tq * d.Tk * d.hd >= kParallelMin)
    {
        std::vector<T> p(size_t(cfg.block * d.Tk));  // per-thread scores of one query block
        std::vector<uint32_t> words;                 // and a row's dropout bits
#pragma omp for schedule(dynamic)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t qi = task % q_blocks, h = (task / q_blocks) % d.nq;
            const int64_t b = task / (q_blocks * d.nq);
            forward_block(d, cfg, query_block(d, cfg, b, h, qi * cfg.block), q, k, v, out, lse,
                          p.data(), words);
        }
    }
}

// Backward of one (batch, key/value group): for each of its query heads and query blocks,
// recompute P from lse, then (dropout: P_drop, dP through the same mask)
//   dv += P_drop^T dout,  dP = dout v^T,  dS = scale P (dP - D),  dq = dS k,  dk += dS^T q
// with D = rowsum(dout * out); the group's dk and dv have this one writer, and so has its
// heads' rows of dbias (+= dS / scale) when the caller runs a group's batch rows in turn.
// A sink's gradient, -Σ_t exp(sink - lse_t) D_t over the head's queries, goes to dsink (this
// group's heads, one writer too).
template <class T>
void backward_group(const Dims& d, const AttentionConfig& cfg, const T* q, const T* k, const T* v,
                    const T* out, const T* lse, const T* dout, T* dq, T* dk, T* dv, T* dbias,
                    T* dsink, int64_t b, int64_t g, std::vector<T>& p, std::vector<T>& ds,
                    std::vector<uint32_t>& words) {
    const int64_t hd = d.hd, ldq = d.nq * hd, ldkv = d.ng * hd, per_group = d.nq / d.ng;
    const k::Dropout drop = k::Dropout::make(cfg.dropout, cfg.seed, cfg.offset);
    const bool use_dropout = cfg.dropout > 0.0f;
    const T scale = T(cfg.scale);
    T* dk_rows = dk + at_kv(d, b, 0, g);
    T* dv_rows = dv + at_kv(d, b, 0, g);
    for (int64_t s = 0; s < d.Tk; ++s) {
        std::fill_n(dk_rows + s * ldkv, hd, T(0));
        std::fill_n(dv_rows + s * ldkv, hd, T(0));
    }
    const T* k_rows = k + at_kv(d, b, 0, g);
    const T* v_rows = v + at_kv(d, b, 0, g);
    for (int64_t h = g * per_group; h < (g + 1) * per_group; ++h)
        for (int64_t t0 = 0; t0 < d.Tq; t0 += cfg.block) {
            const QueryBlock qb = query_block(d, cfg, b, h, t0);
            const T* q_blk = q + at_q(d, b, t0, h);
            const T* g_blk = dout + at_q(d, b, t0, h);
            blas_gemm(false, true, qb.rows, qb.keys, hd, scale, q_blk, ldq, k_rows, ldkv, T(0),
                      p.data(), qb.keys);
            if (d.bias) add_bias(d, qb, in_t<T>(cfg.bias), p.data());
            probabilities(d, cfg, qb, p.data(), lse, static_cast<T*>(nullptr));
            blas_gemm(false, true, qb.rows, qb.keys, hd, T(1), g_blk, ldq, v_rows, ldkv, T(0),
                      ds.data(), qb.keys);
            for (int64_t r = 0; r < qb.rows; ++r) {
                T *pr = p.data() + r * qb.keys, *dsr = ds.data() + r * qb.keys;
                const T row_dot = lane_dot(g_blk + r * ldq, out + at_q(d, b, t0 + r, h), hd);
                if (dsink)
                    dsink[h] -= k::exp(in_t<T>(cfg.sink)[h] - lse[(b * d.nq + h) * d.Tq + t0 + r]) *
                                row_dot;
                const uint32_t* bits =
                    use_dropout
                        ? counter_words(cfg.seed, cfg.offset + counter0(d, qb, r), qb.keys, words)
                        : nullptr;
                T* dbias_row = dbias ? dbias + (h * d.Tq + t0 + r) * d.Tk : nullptr;
                for (int64_t j = 0; j < qb.keys; ++j) {
                    if (pr[j] == T(0)) {  // invisible (or underflowed: no gradient either)
                        dsr[j] = T(0);
                        continue;
                    }
                    const bool kept = !use_dropout || drop.keep_bits(bits[j]);
                    const T dscore = pr[j] * (drop.bwd(dsr[j], kept) - row_dot);
                    if (dbias_row) dbias_row[j] += dscore;
                    dsr[j] = scale * dscore;
                    pr[j] = drop.fwd(pr[j], kept);
                }
            }
            blas_gemm(true, false, qb.keys, hd, qb.rows, T(1), p.data(), qb.keys, g_blk, ldq, T(1),
                      dv_rows, ldkv);
            blas_gemm(false, false, qb.rows, hd, qb.keys, T(1), ds.data(), qb.keys, k_rows, ldkv,
                      T(0), dq + at_q(d, b, t0, h), ldq);
            blas_gemm(true, false, qb.keys, hd, qb.rows, T(1), ds.data(), qb.keys, q_blk, ldq, T(1),
                      dk_rows, ldkv);
        }
}

}  // namespace

void CpuBackend::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionConfig& config, Tensor& out, Tensor& lse) {
    if (any_half({&q, &k, &v, &out, &lse})) {
        HalfAsFloat h;
        attention_forward(h.in(q), h.in(k), h.in(v), config, h.out(out), h.out(lse));
        return h.finish();
    }
    const char* op = "attention_forward";
    Dims d = check_qkv(op, q, k, v, config);
    check_float_shape(op, "out", out, q.shape(), q.dtype());
    check_float_shape(op, "lse", lse, {d.B, d.nq, d.Tq}, q.dtype());
    with_float(q.dtype(), [&](auto t) {
        using T = decltype(t);
        forward_blocks<T>(d, config, in_t<T>(q), in_t<T>(k), in_t<T>(v), out_t<T>(out),
                          out_t<T>(lse));
    });
}

void CpuBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, const Tensor& lse, const Tensor& dout,
                                    const AttentionConfig& config, Tensor& dq, Tensor& dk,
                                    Tensor& dv) {
    if (any_half({&q, &k, &v, &out, &lse, &dout, &dq, &dk, &dv})) {
        HalfAsFloat h;
        attention_backward(h.in(q), h.in(k), h.in(v), h.in(out), h.in(lse), h.in(dout), config,
                           h.out(dq), h.out(dk), h.out(dv));
        return h.finish();
    }
    const char* op = "attention_backward";
    Dims d = check_qkv(op, q, k, v, config);
    check_float_shape(op, "out", out, q.shape(), q.dtype());
    check_float_shape(op, "lse", lse, {d.B, d.nq, d.Tq}, q.dtype());
    check_float_shape(op, "dout", dout, q.shape(), q.dtype());
    check_float_shape(op, "dq", dq, q.shape(), q.dtype());
    check_float_shape(op, "dk", dk, k.shape(), q.dtype());
    check_float_shape(op, "dv", dv, k.shape(), q.dtype());
    with_float(q.dtype(), [&](auto t) {
        using T = decltype(t);
        const T *qp = in_t<T>(q), *kp = in_t<T>(k), *vp = in_t<T>(v), *op_ = in_t<T>(out);
        const T *lp = in_t<T>(lse), *gp = in_t<T>(dout);
        T *dqp = out_t<T>(dq), *dkp = out_t<T>(dk), *dvp = out_t<T>(dv);
        // The bias's and the sink's gradients sum over the batch: one task per group then, its
        // rows in turn.
        T* dbias = config.bias_grad.defined() ? out_t<T>(config.bias_grad) : nullptr;
        T* dsink = config.sink_grad.defined() ? out_t<T>(config.sink_grad) : nullptr;
        const bool per_group = dbias || dsink;
        const int64_t tasks = per_group ? d.ng : d.B * d.ng, rows_per_task = per_group ? d.B : 1;
#pragma omp parallel if (d.B * d.nq * d.Tq * d.Tk * d.hd >= kParallelMin)
        {
            std::vector<T> p(size_t(config.block * d.Tk)), ds(p.size());  // per-thread scratch
            std::vector<uint32_t> words;
#pragma omp for schedule(dynamic)
            for (int64_t task = 0; task < tasks; ++task)
                for (int64_t i = 0; i < rows_per_task; ++i) {
                    const int64_t b = per_group ? i : task / d.ng, g = task % d.ng;
                    backward_group<T>(d, config, qp, kp, vp, op_, lp, gp, dqp, dkp, dvp, dbias,
                                      dsink, b, g, p, ds, words);
                }
        }
    });
}

}  // namespace mt::cpu
