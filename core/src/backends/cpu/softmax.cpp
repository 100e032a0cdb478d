// CPU traversal of the row softmax: one OpenMP task per row, the row's OnlineMax folded in
// fixed lanes. The math is mt/kernels/softmax.h.
#include "cpu_backend.h"

#include <algorithm>

#include "half_as_float.h"
#include "mt/kernels/softmax.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_f32;
using detail::check_f32_shape;
using detail::fold_lanes;
using detail::in;
using detail::kParallelMin;
using detail::out;

void CpuBackend::softmax_forward(const Tensor& x, float scale, SoftmaxMask mask, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        softmax_forward(h.in(x), scale, mask, h.out(y));
        return h.finish();
    }
    const char* op = "softmax_forward";
    check_f32(op, "x", x);
    check_f32_shape(op, "y", y, x.shape());
    const bool causal = mask == SoftmaxMask::causal;
    MT_CHECK(x.dim() >= (causal ? 2 : 1), op, ": x must be ", causal ? "(..., T, S)" : "(..., S)",
             ", got ", x.describe());
    const int64_t cols = x.size(-1);
    const int64_t queries = causal ? x.size(-2) : 1;
    MT_CHECK(!causal || cols >= queries, op, ": a causal mask needs S >= T, got ", x.describe());
    if (cols == 0) return;
    const int64_t rows = x.numel() / cols;
    const float* xp = in(x);
    float* yp = out(y);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        // Keys [0, visible) are seen; the rest is masked (causal: query t sees t + S - T + 1).
        const int64_t visible = causal ? r % queries + cols - queries + 1 : cols;
        const float* xr = xp + r * cols;
        float* yr = yp + r * cols;
        auto st = fold_lanes<k::OnlineMax<float>>(
            visible, [&](k::OnlineMax<float>& s, int64_t j) { s.add(scale * xr[j]); });
        const float inv_s = 1.0f / st.s;
        for (int64_t j = 0; j < visible; ++j) yr[j] = k::softmax_fwd(xr[j], scale, st.m, inv_s);
        std::fill(yr + visible, yr + cols, 0.0f);
    }
}

void CpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, float scale, Tensor& dx) {
    if (any_half({&y, &dy, &dx})) {
        HalfAsFloat h;
        softmax_backward(h.in(y), h.in(dy), scale, h.out(dx));
        return h.finish();
    }
    const char* op = "softmax_backward";
    check_f32(op, "y", y);
    MT_CHECK(y.dim() >= 1, op, ": y must be (..., S), got ", y.describe());
    check_f32_shape(op, "dy", dy, y.shape());
    check_f32_shape(op, "dx", dx, y.shape());
    const int64_t cols = y.size(-1);
    if (cols == 0) return;
    const int64_t rows = y.numel() / cols;
    const float *yp = in(y), *dyp = in(dy);
    float* dxp = out(dx);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const float *yr = yp + r * cols, *dyr = dyp + r * cols;
        float dot = fold_lanes<k::Sum<float>>(cols, [&](k::Sum<float>& s, int64_t j) {
                        s.add(yr[j] * dyr[j]);
                    }).finalize();
        float* dxr = dxp + r * cols;
        for (int64_t j = 0; j < cols; ++j) dxr[j] = k::softmax_bwd(yr[j], dyr[j], dot, scale);
    }
}

}  // namespace mt::cpu
