// CPU traversal of LayerNorm and RMSNorm (f32 and f64): one OpenMP task per row for the forward and
// for dx, detail::column_grads for the parameter grads. The math is mt/kernels/norms.h.
#include "cpu_backend.h"

#include <algorithm>

#include "half_as_float.h"
#include "mt/kernels/norms.h"
#include "mt/kernels/reduce.h"
#include "op_support.h"

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

// Rows and width of x (..., C), after checking x and the (C) parameter tensors.
struct RowShape {
    int64_t rows, cols;
};

RowShape row_shape(const char* op, const Tensor& x, const Tensor& weight) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, ": x must be (..., C) with C > 0, got ",
             x.describe());
    int64_t cols = x.size(-1);
    check_float_shape(op, "weight", weight, {cols}, x.dtype());
    return {x.numel() / cols, cols};
}

template <class T>
void layer_norm_forward_t(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const NormConfig& config, Tensor& y, Tensor& mean, Tensor& rstd) {
    const char* op = "layer_norm_forward";
    RowShape s = row_shape(op, x, weight);
    check_float_shape(op, "bias", bias, {s.cols}, x.dtype());
    check_float_shape(op, "y", y, x.shape(), x.dtype());
    check_float_shape(op, "mean", mean, leading_shape(x), x.dtype());
    check_float_shape(op, "rstd", rstd, leading_shape(x), x.dtype());
    const T *xp = in_t<T>(x), *w = in_t<T>(weight), *b = in_t<T>(bias);
    T *yp = out_t<T>(y), *mp = out_t<T>(mean), *rp = out_t<T>(rstd);
    const bool zc = config.zero_centered_gamma;
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const T* xr = xp + r * s.cols;
        auto moments = fold_lanes<k::Welford<T>>(s.cols, [&](k::Welford<T>& st, int64_t j) {
                           st.add(xr[j]);
                       }).finalize();
        T rs = k::norm_rstd(moments.var, T(config.eps));
        T* yr = yp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            yr[j] = k::layer_norm_fwd(xr[j], moments.mean, rs, k::norm_gamma(w[j], zc), b[j]);
        mp[r] = moments.mean;
        rp[r] = rs;
    }
}

template <class T>
void layer_norm_backward_t(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& rstd, const NormConfig& config,
                           Tensor& dx, Tensor& dweight, Tensor& dbias) {
    const char* op = "layer_norm_backward";
    RowShape s = row_shape(op, x, weight);
    check_float_shape(op, "dy", dy, x.shape(), x.dtype());
    check_float_shape(op, "mean", mean, leading_shape(x), x.dtype());
    check_float_shape(op, "rstd", rstd, leading_shape(x), x.dtype());
    check_float_shape(op, "dx", dx, x.shape(), x.dtype());
    check_float_shape(op, "dweight", dweight, {s.cols}, x.dtype());
    check_float_shape(op, "dbias", dbias, {s.cols}, x.dtype());
    const T *xp = in_t<T>(x), *dyp = in_t<T>(dy), *w = in_t<T>(weight), *mp = in_t<T>(mean),
            *rp = in_t<T>(rstd);
    const bool zc = config.zero_centered_gamma;
    auto xhat = [&](int64_t r, int64_t j) { return (xp[r * s.cols + j] - mp[r]) * rp[r]; };
    // Parameter grads first: dx may alias dy.
    detail::column_grads(s.rows, s.cols, dyp, xhat, out_t<T>(dweight), out_t<T>(dbias));
    T* dxp = out_t<T>(dx);
    const T inv_cols = T(1) / T(s.cols);
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const T* dyr = dyp + r * s.cols;
        auto sums = fold_lanes<k::NormGradSums<T>>(s.cols, [&](k::NormGradSums<T>& st, int64_t j) {
            st.add(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j));
        });
        T mean_g = sums.sum_g * inv_cols, mean_g_xhat = sums.sum_g_xhat * inv_cols;
        T* dxr = dxp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            dxr[j] = k::layer_norm_bwd(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j), rp[r], mean_g,
                                       mean_g_xhat);
    }
}

template <class T>
void rms_norm_forward_t(const Tensor& x, const Tensor& weight, const NormConfig& config, Tensor& y,
                        Tensor& rstd) {
    const char* op = "rms_norm_forward";
    RowShape s = row_shape(op, x, weight);
    check_float_shape(op, "y", y, x.shape(), x.dtype());
    check_float_shape(op, "rstd", rstd, leading_shape(x), x.dtype());
    const T *xp = in_t<T>(x), *w = in_t<T>(weight);
    T *yp = out_t<T>(y), *rp = out_t<T>(rstd);
    const bool zc = config.zero_centered_gamma;
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const T* xr = xp + r * s.cols;
        T mean_sq = fold_lanes<k::SumSq<T>>(s.cols, [&](k::SumSq<T>& st, int64_t j) {
                        st.add(xr[j]);
                    }).finalize();
        T rs = k::norm_rstd(mean_sq, T(config.eps));
        T* yr = yp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            yr[j] = k::rms_norm_fwd(xr[j], rs, k::norm_gamma(w[j], zc));
        rp[r] = rs;
    }
}

template <class T>
void rms_norm_backward_t(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const Tensor& rstd, const NormConfig& config, Tensor& dx,
                         Tensor& dweight) {
    const char* op = "rms_norm_backward";
    RowShape s = row_shape(op, x, weight);
    check_float_shape(op, "dy", dy, x.shape(), x.dtype());
    check_float_shape(op, "rstd", rstd, leading_shape(x), x.dtype());
    check_float_shape(op, "dx", dx, x.shape(), x.dtype());
    check_float_shape(op, "dweight", dweight, {s.cols}, x.dtype());
    const T *xp = in_t<T>(x), *dyp = in_t<T>(dy), *w = in_t<T>(weight), *rp = in_t<T>(rstd);
    const bool zc = config.zero_centered_gamma;
    auto xhat = [&](int64_t r, int64_t j) { return xp[r * s.cols + j] * rp[r]; };
    detail::column_grads(s.rows, s.cols, dyp, xhat, out_t<T>(dweight), static_cast<T*>(nullptr));
    T* dxp = out_t<T>(dx);
    const T inv_cols = T(1) / T(s.cols);
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
    for (int64_t r = 0; r < s.rows; ++r) {
        const T* dyr = dyp + r * s.cols;
        auto sums = fold_lanes<k::NormGradSums<T>>(s.cols, [&](k::NormGradSums<T>& st, int64_t j) {
            st.add(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j));
        });
        T mean_g_xhat = sums.sum_g_xhat * inv_cols;
        T* dxr = dxp + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j)
            dxr[j] =
                k::rms_norm_bwd(dyr[j] * k::norm_gamma(w[j], zc), xhat(r, j), rp[r], mean_g_xhat);
    }
}

}  // namespace

void CpuBackend::layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    const NormConfig& config, Tensor& y, Tensor& mean,
                                    Tensor& rstd) {
    if (any_half({&x, &weight, &bias, &y, &mean, &rstd})) {
        HalfAsFloat h;
        layer_norm_forward(h.in(x), h.in(weight), h.in(bias), config, h.out(y), h.out(mean),
                           h.out(rstd));
        return h.finish();
    }
    detail::with_float(x.dtype(), [&](auto t) {
        layer_norm_forward_t<decltype(t)>(x, weight, bias, config, y, mean, rstd);
    });
}

void CpuBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd,
                                     const NormConfig& config, Tensor& dx, Tensor& dweight,
                                     Tensor& dbias) {
    if (any_half({&dy, &x, &weight, &mean, &rstd, &dx, &dweight, &dbias})) {
        HalfAsFloat h;
        layer_norm_backward(h.in(dy), h.in(x), h.in(weight), h.in(mean), h.in(rstd), config,
                            h.out(dx), h.inout(dweight), h.inout(dbias));
        return h.finish();
    }
    detail::with_float(x.dtype(), [&](auto t) {
        layer_norm_backward_t<decltype(t)>(dy, x, weight, mean, rstd, config, dx, dweight, dbias);
    });
}

void CpuBackend::rms_norm_forward(const Tensor& x, const Tensor& weight, const NormConfig& config,
                                  Tensor& y, Tensor& rstd) {
    if (any_half({&x, &weight, &y, &rstd})) {
        HalfAsFloat h;
        rms_norm_forward(h.in(x), h.in(weight), config, h.out(y), h.out(rstd));
        return h.finish();
    }
    detail::with_float(
        x.dtype(), [&](auto t) { rms_norm_forward_t<decltype(t)>(x, weight, config, y, rstd); });
}

void CpuBackend::rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& rstd, const NormConfig& config, Tensor& dx,
                                   Tensor& dweight) {
    if (any_half({&dy, &x, &weight, &rstd, &dx, &dweight})) {
        HalfAsFloat h;
        rms_norm_backward(h.in(dy), h.in(x), h.in(weight), h.in(rstd), config, h.out(dx),
                          h.inout(dweight));
        return h.finish();
    }
    detail::with_float(x.dtype(), [&](auto t) {
        rms_norm_backward_t<decltype(t)>(dy, x, weight, rstd, config, dx, dweight);
    });
}

}  // namespace mt::cpu
