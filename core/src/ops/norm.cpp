// CPU traversal of LayerNorm and RMSNorm: one OpenMP task per row for the forward and for dx,
// column blocks for the parameter grads (each column summed over rows by one thread, so the
// result does not depend on the thread count). The math is mt/kernels/norms.h.
#include "mt/ops/norm.h"

#include <algorithm>

#include "mt/kernels/norms.h"
#include "mt/kernels/reduce.h"
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

constexpr int64_t kColumnBlock = 128;

// Rows and width of x (..., C), after checking x and the (C) parameter tensors.
struct RowShape {
    int64_t rows, cols;
};

RowShape row_shape(const char* op, const Tensor& x, const Tensor& weight) {
    check_f32(op, "x", x);
    MT_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, ": x must be (..., C) with C > 0, got ",
             x.describe());
    int64_t cols = x.size(-1);
    check_f32_shape(op, "weight", weight, {cols});
    return {x.numel() / cols, cols};
}

// Parameter grads over column blocks: dweight[j] += sum_r dy[r,j] xhat(r,j) and, when dbias is
// given, dbias[j] += sum_r dy[r,j]. xhat(r, j) recomputes the normalised input.
template <class Xhat>
void param_grads(RowShape s, const float* dy, Xhat xhat, float* dweight, float* dbias) {
    int64_t blocks = (s.cols + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        int64_t j0 = b * kColumnBlock, j1 = std::min(s.cols, j0 + kColumnBlock);
        double acc_w[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
        for (int64_t r = 0; r < s.rows; ++r) {
            const float* dyr = dy + r * s.cols;
            for (int64_t j = j0; j < j1; ++j) {
                acc_w[j - j0] += double(dyr[j]) * xhat(r, j);
                acc_b[j - j0] += dyr[j];
            }
        }
        for (int64_t j = j0; j < j1; ++j) {
            dweight[j] += float(acc_w[j - j0]);
            if (dbias) dbias[j] += float(acc_b[j - j0]);
        }
    }
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const NormConfig& config, Tensor& y, Tensor& mean, Tensor& rstd) {
    const char* op = "layer_norm_forward";
    RowShape s = row_shape(op, x, weight);
    check_f32_shape(op, "bias", bias, {s.cols});
    check_f32_shape(op, "y", y, x.shape());
    check_f32_shape(op, "mean", mean, leading_shape(x));
    check_f32_shape(op, "rstd", rstd, leading_shape(x));
    const float *xp = in(x), *w = in(weight), *b = in(bias);
    float *yp = out(y), *mp = out(mean), *rp = out(rstd);
    const bool zc = config.zero_centered_gamma;
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const float* xr = xp + r * s.cols;
        auto moments = fold_lanes<k::Welford<float>>(s.cols, [&](k::Welford<float>& st, int64_t j) {
                           st.add(xr[j]);
                       }).finalize();
        float rs = k::norm_rstd(moments.var, config.eps);
        float* yr = yp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            yr[j] = k::layer_norm_fwd(xr[j], moments.mean, rs, k::norm_gamma(w[j], zc), b[j]);
        mp[r] = moments.mean;
        rp[r] = rs;
    }
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const NormConfig& config,
                         Tensor& dx, Tensor& dweight, Tensor& dbias) {
    const char* op = "layer_norm_backward";
    RowShape s = row_shape(op, x, weight);
    check_f32_shape(op, "dy", dy, x.shape());
    check_f32_shape(op, "mean", mean, leading_shape(x));
    check_f32_shape(op, "rstd", rstd, leading_shape(x));
    check_f32_shape(op, "dx", dx, x.shape());
    check_f32_shape(op, "dweight", dweight, {s.cols});
    check_f32_shape(op, "dbias", dbias, {s.cols});
    const float *xp = in(x), *dyp = in(dy), *w = in(weight), *mp = in(mean), *rp = in(rstd);
    const bool zc = config.zero_centered_gamma;
    auto xhat = [&](int64_t r, int64_t j) { return (xp[r * s.cols + j] - mp[r]) * rp[r]; };
    // Parameter grads first: dx may alias dy.
    param_grads(s, dyp, xhat, out(dweight), out(dbias));
    float* dxp = out(dx);
    const float inv_cols = 1.0f / float(s.cols);
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const float* dyr = dyp + r * s.cols;
        auto sums =
            fold_lanes<k::NormGradSums<float>>(s.cols, [&](k::NormGradSums<float>& st, int64_t j) {
                st.add(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j));
            });
        float mean_g = sums.sum_g * inv_cols, mean_g_xhat = sums.sum_g_xhat * inv_cols;
        float* dxr = dxp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            dxr[j] = k::layer_norm_bwd(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j), rp[r], mean_g,
                                       mean_g_xhat);
    }
}

void rms_norm_forward(const Tensor& x, const Tensor& weight, const NormConfig& config, Tensor& y,
                      Tensor& rstd) {
    const char* op = "rms_norm_forward";
    RowShape s = row_shape(op, x, weight);
    check_f32_shape(op, "y", y, x.shape());
    check_f32_shape(op, "rstd", rstd, leading_shape(x));
    const float *xp = in(x), *w = in(weight);
    float *yp = out(y), *rp = out(rstd);
    const bool zc = config.zero_centered_gamma;
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const float* xr = xp + r * s.cols;
        float mean_sq = fold_lanes<k::SumSq<float>>(s.cols, [&](k::SumSq<float>& st, int64_t j) {
                            st.add(xr[j]);
                        }).finalize();
        float rs = k::norm_rstd(mean_sq, config.eps);
        float* yr = yp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            yr[j] = k::rms_norm_fwd(xr[j], rs, k::norm_gamma(w[j], zc));
        rp[r] = rs;
    }
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       const NormConfig& config, Tensor& dx, Tensor& dweight) {
    const char* op = "rms_norm_backward";
    RowShape s = row_shape(op, x, weight);
    check_f32_shape(op, "dy", dy, x.shape());
    check_f32_shape(op, "rstd", rstd, leading_shape(x));
    check_f32_shape(op, "dx", dx, x.shape());
    check_f32_shape(op, "dweight", dweight, {s.cols});
    const float *xp = in(x), *dyp = in(dy), *w = in(weight), *rp = in(rstd);
    const bool zc = config.zero_centered_gamma;
    auto xhat = [&](int64_t r, int64_t j) { return xp[r * s.cols + j] * rp[r]; };
    param_grads(s, dyp, xhat, out(dweight), nullptr);
    float* dxp = out(dx);
    const float inv_cols = 1.0f / float(s.cols);
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const float* dyr = dyp + r * s.cols;
        auto sums =
            fold_lanes<k::NormGradSums<float>>(s.cols, [&](k::NormGradSums<float>& st, int64_t j) {
                st.add(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j));
            });
        float mean_g_xhat = sums.sum_g_xhat * inv_cols;
        float* dxr = dxp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            dxr[j] =
                k::rms_norm_bwd(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j), rp[r], mean_g_xhat);
    }
}

}  // namespace mt::ops
