// CPU traversal of per-row cross-entropy: one OpenMP task per row, log-sum-exp from an
// OnlineMax folded in fixed lanes. The math is mt/kernels/cross_entropy.h.
#include "mt/ops/cross_entropy.h"

#include <cstdint>
#include <vector>

#include "mt/kernels/cross_entropy.h"
#include "op_support.h"

namespace mt::ops {

using detail::check_f32;
using detail::check_f32_shape;
using detail::fold_lanes;
using detail::in;
using detail::kParallelMin;
using detail::leading_shape;
using detail::out;

namespace {

// Row count and vocabulary of logits (..., V), after checking logits and targets (...).
struct Rows {
    int64_t rows, vocab;
};

Rows check_rows(const char* op, const Tensor& logits, const Tensor& targets) {
    check_f32(op, "logits", logits);
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

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& losses,
                           Tensor& lse) {
    const char* op = "cross_entropy_forward";
    auto [rows, vocab] = check_rows(op, logits, targets);
    check_f32_shape(op, "losses", losses, targets.shape());
    check_f32_shape(op, "lse", lse, targets.shape());
    std::vector<int64_t> ids = target_ids(op, targets, rows, vocab);
    const float* lp = in(logits);
    float *loss = out(losses), *lsep = out(lse);
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const float* lr = lp + r * vocab;
        float row_lse =
            fold_lanes<k::OnlineMax<float>>(vocab, [&](k::OnlineMax<float>& s, int64_t j) {
                s.add(lr[j]);
            }).finalize();
        lsep[r] = row_lse;
        loss[r] = k::cross_entropy_loss(row_lse, lr[ids[r]]);
    }
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            const Tensor& dlosses, Tensor& dlogits) {
    const char* op = "cross_entropy_backward";
    auto [rows, vocab] = check_rows(op, logits, targets);
    check_f32_shape(op, "lse", lse, targets.shape());
    check_f32_shape(op, "dlosses", dlosses, targets.shape());
    check_f32_shape(op, "dlogits", dlogits, logits.shape());
    std::vector<int64_t> ids = target_ids(op, targets, rows, vocab);
    const float *lp = in(logits), *lsep = in(lse), *dl = in(dlosses);
    float* dp = out(dlogits);
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const float* lr = lp + r * vocab;
        float* dr = dp + r * vocab;
        for (int64_t j = 0; j < vocab; ++j)
            dr[j] = k::cross_entropy_bwd(lr[j], lsep[r], j == ids[r], dl[r]);
    }
}

}  // namespace mt::ops
