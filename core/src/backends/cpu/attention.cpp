// CPU traversal of block-wise attention. Forward: one OpenMP task per (batch, head, query
// block) keeps each row's running max, normaliser and output accumulator over key blocks.
// Backward: one task per (batch, key/value group), so the group's dk and dv have one writer.
// Block products are written as axpy loops along contiguous rows so the compiler vectorises
// them without reassociating sums.
#include "cpu_backend.h"

#include <algorithm>
#include <vector>

#include "half_as_float.h"
#include "mt/kernels/rng.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

struct Dims {
    int64_t B, T, nq, ng, hd;
    const int32_t* document_start;  // (B, T), or null: no per-document limit
};

Dims check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
               const AttentionConfig& config) {
    check_float(op, "q", q);
    MT_CHECK(q.dim() == 4, op, ": q must be (B, T, nq, hd), got ", q.describe());
    check_float(op, "k", k);
    MT_CHECK(k.dim() == 4 && k.size(0) == q.size(0) && k.size(1) == q.size(1) &&
                 k.size(3) == q.size(3) && k.size(2) > 0 && q.size(2) % k.size(2) == 0,
             op, ": k must be (B, T, ng, hd) with ng dividing nq for q ", q.describe(), ", got ",
             k.describe());
    check_float_shape(op, "k", k, k.shape(), q.dtype());
    check_float_shape(op, "v", v, k.shape(), q.dtype());
    MT_CHECK(config.block > 0, op, ": block must be > 0, got ", config.block);
    MT_CHECK(config.dropout >= 0.0f && config.dropout < 1.0f, op,
             ": dropout must be in [0, 1), got ", config.dropout);
    const Tensor& starts = config.document_start;
    if (starts.defined())
        MT_CHECK(starts.dtype() == DType::i32 && starts.is_contiguous() &&
                     starts.device().type == DeviceType::cpu &&
                     starts.shape() == Shape({q.size(0), q.size(1)}),
                 op, ": document_start must be a contiguous i32 (B, T) CPU tensor, got ",
                 starts.describe());
    return {q.size(0), q.size(1), q.size(2),
            k.size(2), q.size(3), starts.defined() ? starts.data<int32_t>() : nullptr};
}

template <class T>
T dot(const T* a, const T* b, int64_t n) {
    T s = T(0);
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

// y[0, n) += a * x[0, n): the inner loop of every block product (contiguous, vectorises).
template <class T>
void axpy(T a, const T* x, T* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// Row offsets of (b, t, head) in a (B, T, heads, hd) tensor.
inline int64_t at(const Dims& d, int64_t b, int64_t t, int64_t heads, int64_t h) {
    return ((b * d.T + t) * heads + h) * d.hd;
}

// S (rows x cols) = scale * A B^T for A rows (stride lda) and B rows (stride ldb) of length hd.
// B is first transposed into bt (hd x cols) so the inner loop runs along S's rows.
template <class T>
void block_scores(const T* a, int64_t lda, const T* b, int64_t ldb, int64_t rows, int64_t cols,
                  int64_t hd, T scale, T* bt, T* s) {
    for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < hd; ++i) bt[i * cols + j] = b[j * ldb + i];
    for (int64_t r = 0; r < rows; ++r) {
        T* sr = s + r * cols;
        std::fill(sr, sr + cols, T(0));
        for (int64_t i = 0; i < hd; ++i) axpy(a[r * lda + i], bt + i * cols, sr, cols);
        for (int64_t j = 0; j < cols; ++j) sr[j] *= scale;
    }
}

// The keys [s0 + first, s0 + end) of a block visible to query t of batch row b: causal limits
// the end (s <= t), the document start the beginning. Empty when first >= end.
struct KeyRange {
    int64_t first, end;
};
inline KeyRange visible_keys(const AttentionConfig& cfg, const Dims& d, int64_t b, int64_t t,
                             int64_t s0, int64_t cols) {
    const int64_t end = cfg.causal ? std::min(cols, t - s0 + 1) : cols;
    const int64_t first =
        d.document_start ? std::max<int64_t>(0, d.document_start[b * d.T + t] - s0) : 0;
    return {first, end};
}

// Forward of one (batch, head, query block): the running max m, normaliser l and output
// accumulator of each row are updated key block by key block (online softmax).
template <class T>
struct ForwardBlock {
    const Dims& d;
    const AttentionConfig& cfg;
    const T *q, *k, *v;
    T *out, *lse;
    std::vector<T> bt, s, acc, m, l;  // per-thread scratch

    ForwardBlock(const Dims& dims, const AttentionConfig& config, const T* q_, const T* k_,
                 const T* v_, T* out_, T* lse_)
        : d(dims),
          cfg(config),
          q(q_),
          k(k_),
          v(v_),
          out(out_),
          lse(lse_),
          bt(dims.hd * config.block),
          s(config.block * config.block),
          acc(config.block * dims.hd),
          m(config.block),
          l(config.block) {}

    void run(int64_t b, int64_t h, int64_t t0, int64_t rows) {
        const int64_t g = h / (d.nq / d.ng), bk = cfg.block, hd = d.hd;
        const k::Dropout drop = k::Dropout::make(cfg.dropout, cfg.seed, cfg.offset);
        const bool use_dropout = cfg.dropout > 0.0f;  // p = 0 keeps all: skip drawing bits
        const T* qb = q + at(d, b, t0, d.nq, h);
        std::fill(m.begin(), m.end(), k::neg_inf<T>());
        std::fill(l.begin(), l.end(), T(0));
        std::fill(acc.begin(), acc.end(), T(0));
        const int64_t key_end = cfg.causal ? t0 + rows : d.T;
        for (int64_t s0 = 0; s0 < key_end; s0 += bk) {
            const int64_t cols = std::min(bk, key_end - s0);
            block_scores(qb, d.nq * hd, k + at(d, b, s0, d.ng, g), d.ng * hd, rows, cols, hd,
                         T(cfg.scale), bt.data(), s.data());
            for (int64_t r = 0; r < rows; ++r) {
                T* sr = s.data() + r * cols;
                const auto [first, vis] = visible_keys(cfg, d, b, t0 + r, s0, cols);
                if (first >= vis) {
                    std::fill(sr, sr + cols, T(0));
                    continue;
                }
                std::fill(sr, sr + first, T(0));
                T m_new = m[r];
                for (int64_t j = first; j < vis; ++j) m_new = std::max(m_new, sr[j]);
                const T rescale = m[r] == k::neg_inf<T>() ? T(0) : k::exp(m[r] - m_new);
                l[r] *= rescale;
                for (int64_t i = 0; i < hd; ++i) acc[r * hd + i] *= rescale;
                const uint64_t counter0 = uint64_t(((b * d.nq + h) * d.T + t0 + r) * d.T + s0);
                for (int64_t j = first; j < vis; ++j) {
                    const T p = k::exp(sr[j] - m_new);
                    l[r] += p;
                    const bool kept = !use_dropout || drop.keep(counter0 + uint64_t(j));
                    sr[j] = drop.fwd(p, kept);
                }
                std::fill(sr + vis, sr + cols, T(0));
                m[r] = m_new;
            }
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t j = 0; j < cols; ++j) {
                    const T p = s[r * cols + j];
                    if (p != T(0)) axpy(p, v + at(d, b, s0 + j, d.ng, g), &acc[r * hd], hd);
                }
        }
        for (int64_t r = 0; r < rows; ++r) {
            T* orow = out + at(d, b, t0 + r, d.nq, h);
            for (int64_t i = 0; i < hd; ++i) orow[i] = acc[r * hd + i] / l[r];
            lse[(b * d.nq + h) * d.T + t0 + r] = m[r] + k::log(l[r]);
        }
    }
};

template <class T>
void forward_blocks(const Dims& d, const AttentionConfig& cfg, const T* q, const T* k, const T* v,
                    T* out, T* lse) {
    const int64_t q_blocks = (d.T + cfg.block - 1) / cfg.block;
    const int64_t tasks = d.B * d.nq * q_blocks;
#pragma omp parallel if (d.B * d.nq * d.T * d.T * d.hd >= kParallelMin)
    {
        ForwardBlock<T> block(d, cfg, q, k, v, out, lse);
#pragma omp for schedule(dynamic)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t qb = task % q_blocks, h = (task / q_blocks) % d.nq;
            const int64_t b = task / (q_blocks * d.nq);
            const int64_t t0 = qb * cfg.block;
            block.run(b, h, t0, std::min(cfg.block, d.T - t0));
        }
    }
}

// Backward of one (batch, key/value group): for each of its query heads and query blocks,
// recompute the block probabilities from lse, then
//   dv += P_drop^T dout,  dS = scale P (dP - D),  dk += dS^T q,  dq += dS k
// with dP = dropout'(dout v^T) and D = rowsum(dout * out).
template <class T>
void backward_group(const Dims& d, const AttentionConfig& cfg, const T* q, const T* k, const T* v,
                    const T* out, const T* lse, const T* dout, T* dq, T* dk, T* dv, int64_t b,
                    int64_t g) {
    const int64_t bk = cfg.block, hd = d.hd, per_group = d.nq / d.ng;
    const k::Dropout drop = k::Dropout::make(cfg.dropout, cfg.seed, cfg.offset);
    const bool use_dropout = cfg.dropout > 0.0f;
    const T scale = T(cfg.scale);
    std::vector<T> bt(hd * bk), p(bk * bk), ds(bk * bk), row_dot(bk);
    for (int64_t t = 0; t < d.T; ++t) {
        std::fill_n(dk + at(d, b, t, d.ng, g), hd, T(0));
        std::fill_n(dv + at(d, b, t, d.ng, g), hd, T(0));
    }
    for (int64_t h = g * per_group; h < (g + 1) * per_group; ++h)
        for (int64_t t0 = 0; t0 < d.T; t0 += bk) {
            const int64_t rows = std::min(bk, d.T - t0);
            const T* qb = q + at(d, b, t0, d.nq, h);
            const T* gb = dout + at(d, b, t0, d.nq, h);
            const int64_t ld = d.nq * hd, ldkv = d.ng * hd;
            for (int64_t r = 0; r < rows; ++r) {
                row_dot[r] = dot(gb + r * ld, out + at(d, b, t0 + r, d.nq, h), hd);
                std::fill_n(dq + at(d, b, t0 + r, d.nq, h), hd, T(0));
            }
            const int64_t key_end = cfg.causal ? t0 + rows : d.T;
            for (int64_t s0 = 0; s0 < key_end; s0 += bk) {
                const int64_t cols = std::min(bk, key_end - s0);
                const T* kb = k + at(d, b, s0, d.ng, g);
                block_scores(qb, ld, kb, ldkv, rows, cols, hd, scale, bt.data(), p.data());
                block_scores(gb, ld, v + at(d, b, s0, d.ng, g), ldkv, rows, cols, hd, T(1),
                             bt.data(), ds.data());
                for (int64_t r = 0; r < rows; ++r) {
                    const auto [first, vis] = visible_keys(cfg, d, b, t0 + r, s0, cols);
                    const T row_lse = lse[(b * d.nq + h) * d.T + t0 + r];
                    const uint64_t counter0 = uint64_t(((b * d.nq + h) * d.T + t0 + r) * d.T + s0);
                    T *pr = p.data() + r * cols, *dsr = ds.data() + r * cols;
                    for (int64_t j = 0; j < cols; ++j) {
                        if (j < first || j >= vis) {
                            pr[j] = dsr[j] = T(0);
                            continue;
                        }
                        const T prob = k::exp(pr[j] - row_lse);
                        const bool kept = !use_dropout || drop.keep(counter0 + uint64_t(j));
                        dsr[j] = scale * prob * (drop.bwd(dsr[j], kept) - row_dot[r]);
                        pr[j] = drop.fwd(prob, kept);
                    }
                }
                for (int64_t r = 0; r < rows; ++r) {
                    const T* qr = qb + r * ld;
                    const T* gr = gb + r * ld;
                    T* dqr = dq + at(d, b, t0 + r, d.nq, h);
                    for (int64_t j = 0; j < cols; ++j) {
                        const T pd = p[r * cols + j], dsv = ds[r * cols + j];
                        if (pd != T(0)) axpy(pd, gr, dv + at(d, b, s0 + j, d.ng, g), hd);
                        if (dsv != T(0)) {
                            axpy(dsv, qr, dk + at(d, b, s0 + j, d.ng, g), hd);
                            axpy(dsv, kb + j * ldkv, dqr, hd);
                        }
                    }
                }
            }
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
    check_float_shape(op, "lse", lse, {d.B, d.nq, d.T}, q.dtype());
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
    check_float_shape(op, "lse", lse, {d.B, d.nq, d.T}, q.dtype());
    check_float_shape(op, "dout", dout, q.shape(), q.dtype());
    check_float_shape(op, "dq", dq, q.shape(), q.dtype());
    check_float_shape(op, "dk", dk, k.shape(), q.dtype());
    check_float_shape(op, "dv", dv, k.shape(), q.dtype());
    with_float(q.dtype(), [&](auto t) {
        using T = decltype(t);
        const T *qp = in_t<T>(q), *kp = in_t<T>(k), *vp = in_t<T>(v), *op_ = in_t<T>(out);
        const T *lp = in_t<T>(lse), *gp = in_t<T>(dout);
        T *dqp = out_t<T>(dq), *dkp = out_t<T>(dk), *dvp = out_t<T>(dv);
#pragma omp parallel for schedule(dynamic) if (d.B * d.nq * d.T * d.T * d.hd >= kParallelMin)
        for (int64_t bg = 0; bg < d.B * d.ng; ++bg)
            backward_group<T>(d, config, qp, kp, vp, op_, lp, gp, dqp, dkp, dvp, bg / d.ng,
                              bg % d.ng);
    });
}

}  // namespace mt::cpu
