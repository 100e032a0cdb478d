// CPU traversal of the bias add (rows in parallel) and its gradient (columns summed over rows
// in double by one pass, so the result does not depend on the thread count).
#include "cpu_backend.h"

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

int64_t check_rows(const char* op, const char* name, const Tensor& x, const Tensor& bias) {
    check_float(op, name, x);
    MT_CHECK(x.dim() >= 1, op, ": ", name, " must be (..., C), got ", x.describe());
    check_float_shape(op, "bias", bias, {x.size(-1)}, x.dtype());
    return x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
}

}  // namespace

void CpuBackend::add_bias(const Tensor& bias, Tensor& y) {
    if (any_half({&bias, &y})) {
        HalfAsFloat h;
        add_bias(h.in(bias), h.out(y));
        return h.finish();
    }
    const int64_t rows = check_rows("add_bias", "y", y, bias);
    const int64_t cols = bias.numel();
    with_float(y.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* b = in_t<T>(bias);
        T* yp = out_t<T>(y);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j) yp[r * cols + j] += b[j];
    });
}

void CpuBackend::add_column_sums(const Tensor& dy, Tensor& dbias) {
    if (any_half({&dy, &dbias})) {
        HalfAsFloat h;
        add_column_sums(h.in(dy), h.out(dbias));
        return h.finish();
    }
    const int64_t rows = check_rows("add_column_sums", "dy", dy, dbias);
    const int64_t cols = dbias.numel();
    with_float(dy.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* g = in_t<T>(dy);
        std::vector<double> acc(cols, 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j) acc[j] += g[r * cols + j];
        T* d = out_t<T>(dbias);
        for (int64_t j = 0; j < cols; ++j) d[j] += T(acc[j]);
    });
}

}  // namespace mt::cpu
