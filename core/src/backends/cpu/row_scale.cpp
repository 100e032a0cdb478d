// CPU per-row scaling and per-row dot products: the MoE experts' routing-prob weighting of each
// token's activation and its gradient. Rows in parallel; each row's dot in double.
#include "cpu_backend.h"

#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// The rows N and columns C of a (N, C) float tensor.
std::pair<int64_t, int64_t> rows_cols(const char* op, const char* name, const Tensor& x) {
    detail::check_float(op, name, x);
    MT_CHECK(x.dim() == 2, op, ": ", name, " must be (N, C), got ", x.describe());
    return {x.size(0), x.size(1)};
}

}  // namespace

void CpuBackend::scale_rows(const Tensor& x, const Tensor& s, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        scale_rows(h.in(x), s, h.out(y));
        return h.finish();
    }
    // Named rather than a structured binding, which clang 14 (the fuzz build) cannot capture.
    const auto shape = rows_cols("scale_rows", "x", x);
    const int64_t rows = shape.first, cols = shape.second;
    detail::check_float_shape("scale_rows", "s", s, {rows}, x.dtype());
    detail::check_float_shape("scale_rows", "y", y, x.shape(), x.dtype());
    with_float(x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* xp = in_t<T>(x);
        const T* sp = in_t<T>(s);
        T* yp = out_t<T>(y);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) yp[r * cols + c] = xp[r * cols + c] * sp[r];
    });
}

void CpuBackend::row_dots(const Tensor& a, const Tensor& b, Tensor& out) {
    if (any_half({&a, &b})) {
        HalfAsFloat h;
        row_dots(h.in(a), h.in(b), out);
        return h.finish();
    }
    const auto shape = rows_cols("row_dots", "a", a);
    const int64_t rows = shape.first, cols = shape.second;
    detail::check_float_shape("row_dots", "b", b, a.shape(), a.dtype());
    detail::check_float_shape("row_dots", "out", out, {rows}, a.dtype());
    with_float(a.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* ap = in_t<T>(a);
        const T* bp = in_t<T>(b);
        T* op = out_t<T>(out);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
        for (int64_t r = 0; r < rows; ++r) {
            double sum = 0;
            for (int64_t c = 0; c < cols; ++c) sum += double(ap[r * cols + c]) * bp[r * cols + c];
            op[r] = T(sum);
        }
    });
}

}  // namespace mt::cpu
