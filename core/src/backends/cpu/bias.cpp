// CPU traversal of the bias add (rows in parallel) and its gradient (columns summed over rows
// in double by one pass, so the result does not depend on the thread count).
#include "cpu_backend.h"

#include <type_traits>
#include <vector>

#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// Rows of x (..., C) for a (C) bias of `bias_dtype` (x's own, or f32 for a bf16 x's grads).
int64_t check_rows(const char* op, const char* name, const Tensor& x, const Tensor& bias,
                   DType bias_dtype) {
    detail::check_float_or_bf16(op, name, x);
    MT_CHECK(x.dim() >= 1, op, ": ", name, " must be (..., C), got ", x.describe());
    detail::check_float_or_bf16_shape(op, "bias", bias, {x.size(-1)}, bias_dtype);
    return x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
}

}  // namespace

void CpuBackend::add_bias(const Tensor& bias, Tensor& y) {
    if (any_f16({&bias, &y}) || bias.dtype() != y.dtype()) {
        HalfAsFloat h;
        add_bias(h.in(bias), h.inout(y));
        return h.finish();
    }
    const int64_t rows = check_rows("add_bias", "y", y, bias, y.dtype());
    const int64_t cols = bias.numel();
    detail::with_float_or_bf16(y.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        const S* b = in_t<S>(bias);
        S* yp = out_t<S>(y);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
        for (int64_t r = 0; r < rows; ++r) {
            S* row = yp + r * cols;
            detail::store_values(row, cols,
                                 [&](int64_t j) { return E::load(row[j]) + E::load(b[j]); });
        }
    });
}

void CpuBackend::add_column_sums(const Tensor& dy, Tensor& dbias) {
    // bf16 gradients sum into an f32 bias grad (Megatron's main_grad) without a widened copy.
    const bool bf16_into_f32 = dy.dtype() == DType::bf16 && dbias.dtype() == DType::f32;
    if (!bf16_into_f32 && (any_half({&dy, &dbias}) || dy.dtype() != dbias.dtype())) {
        HalfAsFloat h;
        add_column_sums(h.in(dy), h.inout(dbias));
        return h.finish();
    }
    const int64_t rows = check_rows("add_column_sums", "dy", dy, dbias, dbias.dtype());
    const int64_t cols = dbias.numel();
    detail::with_float_or_bf16(dy.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        using T = std::conditional_t<std::is_same_v<S, double>, double, float>;  // dbias's
        const S* g = in_t<S>(dy);
        std::vector<double> acc(cols, 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j) acc[j] += E::load(g[r * cols + j]);
        T* d = out_t<T>(dbias);
        for (int64_t j = 0; j < cols; ++j) d[j] += T(acc[j]);
    });
}

}  // namespace mt::cpu
