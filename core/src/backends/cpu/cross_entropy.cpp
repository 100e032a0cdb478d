// CPU traversal of per-row cross-entropy (f32, bf16 logits computed in f32, and f64): one OpenMP
// task per row. In f32 a row's log-sum-exp is its maximum, then the vectorised sum of exp(x -
// max), and its gradient's exps are taken at SIMD width too (libm's expf, one call per logit, cost
// more than the rest of the loss); f64, and rows whose maximum is not finite, fold an OnlineMax in
// fixed lanes. The math is mt/kernels/cross_entropy.h.
#include "cpu_backend.h"

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "half_as_float.h"
#include "lane_dot.h"
#include "mt/kernels/cross_entropy.h"
#include "op_support.h"
#include "vector_exp.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::fold_lanes;
using detail::in_t;
using detail::kParallelMin;
using detail::leading_shape;
using detail::out_t;
using detail::with_float;

namespace {

// Row count and vocabulary of logits (..., V), after checking logits and targets (...).
struct Rows {
    int64_t rows, vocab;
};

Rows check_rows(const char* op, const Tensor& logits, const Tensor& targets) {
    detail::check_float_or_bf16(op, "logits", logits);
    MT_CHECK(logits.dim() >= 1 && logits.size(-1) > 0, op,
             ": logits must be (..., V) with V > 0, got ", logits.describe());
    MT_CHECK(targets.defined() && (targets.dtype() == DType::i64 || targets.dtype() == DType::i32),
             op, ": targets must be i64 or i32, got ", targets.describe());
    MT_CHECK(targets.device().type == DeviceType::cpu && targets.is_contiguous(), op,
             ": targets must be a contiguous CPU tensor, got ", targets.describe());
    MT_CHECK(targets.shape() == leading_shape(logits), op, ": targets must have shape ",
             shape_str(leading_shape(logits)), " for logits ", logits.describe(), ", got ",
             targets.describe());
    return {logits.numel() / logits.size(-1), logits.size(-1)};
}

// targets[r] as int64, checked against the vocabulary (throws outside the parallel loops).
std::vector<int64_t> target_ids(const char* op, const Tensor& targets, int64_t rows,
                                int64_t vocab) {
    std::vector<int64_t> ids(rows);
    for (int64_t r = 0; r < rows; ++r) {
        ids[r] =
            targets.dtype() == DType::i64 ? targets.data<int64_t>()[r] : targets.data<int32_t>()[r];
        MT_CHECK(ids[r] >= 0 && ids[r] < vocab, op, ": target ", ids[r], " of row ", r,
                 " is outside the vocabulary [0, ", vocab, ")");
    }
    return ids;
}

// A vocabulary piece's column of each row's target, or -1 where the target is elsewhere.
std::vector<int64_t> piece_target_columns(const Tensor& targets, int64_t rows, int64_t start,
                                          int64_t vocab) {
    std::vector<int64_t> cols(rows);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t id =
            targets.dtype() == DType::i64 ? targets.data<int64_t>()[r] : targets.data<int32_t>()[r];
        cols[r] = id >= start && id < start + vocab ? id - start : -1;
    }
    return cols;
}

// The dtype of the per-row statistics (lse, losses, their gradients): f32 for bf16 logits, as
// Megatron's cross-entropy upcasts them, else the logits' own.
DType stats_dtype(const Tensor& logits) {
    return logits.dtype() == DType::bf16 ? DType::f32 : logits.dtype();
}

// Whether the ops take these tensors as they are (f32, f64, or bf16 logits with f32
// statistics); otherwise (f16) they go through HalfAsFloat.
bool native(const Tensor& logits, std::initializer_list<const Tensor*> stats) {
    if (logits.dtype() == DType::f16) return false;
    for (const Tensor* t : stats)
        if (t->defined() && t->dtype() != stats_dtype(logits)) return false;
    return true;
}

// A row's logits in the compute type: the row itself, or (bf16) widened into buf.
template <class S, class T>
const T* compute_row(const S* row, int64_t n, std::vector<T>& buf) {
    if constexpr (std::is_same_v<S, T>) {
        return row;
    } else {
        buf.resize(size_t(n));
        for (int64_t j = 0; j < n; ++j) buf[size_t(j)] = detail::Element<S>::load(row[j]);
        return buf.data();
    }
}

// log(sum exp(x)) of a row.
template <class T>
T row_lse(const T* x, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
        const float m = lane_max(x, n, -INFINITY);
        if (std::isfinite(m)) return m + std::log(sum_exp_shifted(x, -m, n));
    }
    return fold_lanes<k::OnlineMax<T>>(n, [&](k::OnlineMax<T>& s, int64_t j) { s.add(x[j]); })
        .finalize();
}

// dlogits rows from logits, the rows' lse and target columns (-1: none) and dlosses.
void backward_rows(const Tensor& logits, const std::vector<int64_t>& cols, const Tensor& lse,
                   const Tensor& dlosses, Tensor& dlogits, int64_t rows, int64_t vocab) {
    detail::with_float_or_bf16(logits.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        using T = typename E::Compute;
        const S* lp = in_t<S>(logits);
        const T *lsep = in_t<T>(lse), *dl = in_t<T>(dlosses);
        S* dp = out_t<S>(dlogits);
#pragma omp parallel if (rows * vocab >= kParallelMin)
        {
            std::vector<T> wide, exps;
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
                const S* lr = lp + r * vocab;
                S* dr = dp + r * vocab;
                // (the row's values named here: clang 14 cannot capture the enclosing function's
                // parameters into a lambda inside an OpenMP loop inside a generic lambda)
                const int64_t target = cols[size_t(r)];
                const T row_lse = lsep[r], row_dl = dl[r];
                if constexpr (std::is_same_v<T, float>) {
                    // exp(logit - lse) at SIMD width (into dr itself for f32 logits).
                    const float* x = compute_row(lr, vocab, wide);
                    float* e = nullptr;
                    if constexpr (std::is_same_v<S, float>) {
                        e = dr;
                    } else {
                        exps.resize(size_t(vocab));
                        e = exps.data();
                    }
                    exp_shifted(x, -row_lse, e, vocab);
                    detail::store_values(dr, vocab, [&](int64_t j) {
                        return k::cross_entropy_bwd_given(e[j], j == target, row_dl);
                    });
                } else {
                    detail::store_values(dr, vocab, [&](int64_t j) {
                        return k::cross_entropy_bwd(E::load(lr[j]), row_lse, j == target, row_dl);
                    });
                }
            }
        }
    });
}

// Each row's log-sum-exp, and the logit of its target column (0 where cols[r] < 0).
void forward_rows(const Tensor& logits, const std::vector<int64_t>& cols, Tensor& lse,
                  Tensor& target_logit, int64_t rows, int64_t vocab) {
    detail::with_float_or_bf16(logits.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        using T = typename E::Compute;
        const S* lp = in_t<S>(logits);
        T *lsep = out_t<T>(lse), *tl = out_t<T>(target_logit);
#pragma omp parallel if (rows * vocab >= kParallelMin)
        {
            std::vector<T> wide;
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
                const S* lr = lp + r * vocab;
                lsep[r] = row_lse(compute_row(lr, vocab, wide), vocab);
                tl[r] = cols[r] >= 0 ? E::load(lr[cols[r]]) : T(0);
            }
        }
    });
}

}  // namespace

void CpuBackend::cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& losses,
                                       Tensor& lse) {
    if (!native(logits, {&losses, &lse})) {
        HalfAsFloat h;
        cross_entropy_forward(h.in(logits), targets, h.out(losses), h.out(lse));
        return h.finish();
    }
    const char* op = "cross_entropy_forward";
    // Named rather than a structured binding, which clang 14 (the fuzz build) cannot capture.
    const Rows shape = check_rows(op, logits, targets);
    const int64_t rows = shape.rows, vocab = shape.vocab;
    check_float_shape(op, "losses", losses, targets.shape(), stats_dtype(logits));
    check_float_shape(op, "lse", lse, targets.shape(), stats_dtype(logits));
    // The target logits land in `losses`, which then become lse - target logit.
    forward_rows(logits, target_ids(op, targets, rows, vocab), lse, losses, rows, vocab);
    with_float(stats_dtype(logits), [&](auto t) {
        using T = decltype(t);
        const T* lsep = in_t<T>(lse);
        T* loss = out_t<T>(losses);
        for (int64_t r = 0; r < rows; ++r) loss[r] = k::cross_entropy_loss(lsep[r], loss[r]);
    });
}

void CpuBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                        const Tensor& lse, const Tensor& dlosses, Tensor& dlogits) {
    if (!native(logits, {&lse, &dlosses}) || dlogits.dtype() != logits.dtype()) {
        HalfAsFloat h;
        cross_entropy_backward(h.in(logits), targets, h.in(lse), h.in(dlosses), h.out(dlogits));
        return h.finish();
    }
    const char* op = "cross_entropy_backward";
    const Rows shape = check_rows(op, logits, targets);
    const int64_t rows = shape.rows, vocab = shape.vocab;
    check_float_shape(op, "lse", lse, targets.shape(), stats_dtype(logits));
    check_float_shape(op, "dlosses", dlosses, targets.shape(), stats_dtype(logits));
    detail::check_float_or_bf16_shape(op, "dlogits", dlogits, logits.shape(), logits.dtype());
    backward_rows(logits, target_ids(op, targets, rows, vocab), lse, dlosses, dlogits, rows, vocab);
}

void CpuBackend::cross_entropy_shard_forward(const Tensor& logits, const Tensor& targets,
                                             int64_t vocab_start, Tensor& lse,
                                             Tensor& target_logit) {
    if (!native(logits, {&lse, &target_logit})) {
        HalfAsFloat h;
        cross_entropy_shard_forward(h.in(logits), targets, vocab_start, h.out(lse),
                                    h.out(target_logit));
        return h.finish();
    }
    const char* op = "cross_entropy_shard_forward";
    const Rows shape = check_rows(op, logits, targets);
    const int64_t rows = shape.rows, vocab = shape.vocab;
    check_float_shape(op, "lse", lse, targets.shape(), stats_dtype(logits));
    check_float_shape(op, "target_logit", target_logit, targets.shape(), stats_dtype(logits));
    forward_rows(logits, piece_target_columns(targets, rows, vocab_start, vocab), lse, target_logit,
                 rows, vocab);
}

void CpuBackend::cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets,
                                              int64_t vocab_start, const Tensor& lse,
                                              const Tensor& dlosses, Tensor& dlogits) {
    if (!native(logits, {&lse, &dlosses}) || dlogits.dtype() != logits.dtype()) {
        HalfAsFloat h;
        cross_entropy_shard_backward(h.in(logits), targets, vocab_start, h.in(lse), h.in(dlosses),
                                     h.out(dlogits));
        return h.finish();
    }
    const char* op = "cross_entropy_shard_backward";
    const Rows shape = check_rows(op, logits, targets);
    const int64_t rows = shape.rows, vocab = shape.vocab;
    check_float_shape(op, "lse", lse, targets.shape(), stats_dtype(logits));
    check_float_shape(op, "dlosses", dlosses, targets.shape(), stats_dtype(logits));
    detail::check_float_or_bf16_shape(op, "dlogits", dlogits, logits.shape(), logits.dtype());
    backward_rows(logits, piece_target_columns(targets, rows, vocab_start, vocab), lse, dlosses,
                  dlogits, rows, vocab);
}

}  // namespace mt::cpu
