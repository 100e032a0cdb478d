// CPU traversal of the context-parallel merge of attention partials: one (batch, head) per
// OpenMP task, the row math in mt/kernels/attention_merge.h.
#include <cmath>

#include "cpu_backend.h"
#include "half_as_float.h"
#include "mt/kernels/attention_merge.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

void CpuBackend::attention_merge(Tensor& out, Tensor& lse, const Tensor& out_part,
                                 const Tensor& lse_part, int64_t row_begin, int64_t row_end) {
    if (any_half({&out, &lse, &out_part, &lse_part})) {
        HalfAsFloat h;
        attention_merge(h.inout(out), h.inout(lse), h.in(out_part), h.in(lse_part), row_begin,
                        row_end);
        return h.finish();
    }
    const char* op = "attention_merge";
    MT_CHECK(out.dim() == 4, op, ": out must be (B, T, nq, hd), got ", out.describe());
    const int64_t B = out.size(0), T = out.size(1), nq = out.size(2), hd = out.size(3);
    check_float_shape(op, "out", out, out.shape(), out.dtype());
    check_float_shape(op, "out_part", out_part, out.shape(), out.dtype());
    check_float_shape(op, "lse", lse, {B, nq, T}, out.dtype());
    check_float_shape(op, "lse_part", lse_part, {B, nq, T}, out.dtype());
    MT_CHECK(0 <= row_begin && row_begin <= row_end && row_end <= T, op, ": rows [", row_begin,
             ", ", row_end, ") outside [0, ", T, ")");
    with_float(out.dtype(), [&](auto type) {
        using F = decltype(type);
        F* o = out_t<F>(out);
        F* l = out_t<F>(lse);
        const F* op_ = in_t<F>(out_part);
        const F* lp = in_t<F>(lse_part);
#pragma omp parallel for if (B * nq * (row_end - row_begin) * hd >= kParallelMin)
        for (int64_t bh = 0; bh < B * nq; ++bh) {
            const int64_t b = bh / nq, h = bh % nq;
            for (int64_t t = row_begin; t < row_end; ++t) {
                const int64_t at = bh * T + t;
                const k::LseMerge<F> m = k::lse_merge(l[at], lp[at]);
                l[at] = m.lse;
                F* row = o + ((b * T + t) * nq + h) * hd;
                const F* part = op_ + ((b * T + t) * nq + h) * hd;
                for (int64_t d = 0; d < hd; ++d)
                    row[d] = m.weight_a * row[d] + m.weight_b * part[d];
            }
        }
    });
}

}  // namespace mt::cpu
