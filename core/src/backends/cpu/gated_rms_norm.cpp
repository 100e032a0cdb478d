// CPU gated group RMSNorm of Mamba-2 (f32 and f64): one OpenMP task per row for y, rstd, dx and
// dz, each group's SiLU exps taken once (at SIMD width in f32); detail::column_grads for the
// weight grad over the normalised values the backward's rows kept.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "mt/kernels/activations.h"
#include "op_support.h"
#include "vector_exp.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

struct GroupShape {
    int64_t rows, cols, group, groups;
};

GroupShape group_shape(const char* op, const Tensor& x, const Tensor& z, const Tensor& weight,
                       int64_t group_size) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() >= 1 && group_size > 0 && x.size(-1) % group_size == 0, op,
             ": x must be (..., C) with C a multiple of the group size ", group_size, ", got ",
             x.describe());
    const int64_t cols = x.size(-1);
    check_float_shape(op, "z", z, x.shape(), x.dtype());
    check_float_shape(op, "weight", weight, {cols}, x.dtype());
    return {x.numel() / cols, cols, group_size, cols / group_size};
}

}  // namespace

void CpuBackend::gated_rms_norm_forward(const Tensor& x, const Tensor& z, const Tensor& weight,
                                        int64_t group_size, double eps, Tensor& y, Tensor& rstd) {
    const char* op = "gated_rms_norm_forward";
    const GroupShape s = group_shape(op, x, z, weight, group_size);
    check_float_shape(op, "y", y, x.shape(), x.dtype());
    MT_CHECK(rstd.numel() == s.rows * s.groups, op, ": rstd must hold ", s.rows * s.groups,
             " values (rows x groups), got ", rstd.describe());
    check_float_shape(op, "rstd", rstd, rstd.shape(), x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *xp = in_t<T>(x), *zp = in_t<T>(z), *w = in_t<T>(weight);
        T *yp = out_t<T>(y), *rp = out_t<T>(rstd);
#pragma omp parallel if (s.rows * s.cols >= kParallelMin)
        {
            std::vector<T> e(size_t(s.group));
#pragma omp for schedule(static)
            for (int64_t r = 0; r < s.rows; ++r) {
                for (int64_t g = 0; g < s.groups; ++g) {
                    const int64_t c0 = r * s.cols + g * s.group;
                    silu_exps(zp + c0, s.group, e.data());
                    double ss = 0;
                    for (int64_t i = 0; i < s.group; ++i) {
                        const T gv = xp[c0 + i] * k::Silu::fwd_given(zp[c0 + i], e[size_t(i)]);
                        yp[c0 + i] = gv;
                        ss += double(gv) * gv;
                    }
                    const T rs = T(1.0 / std::sqrt(ss / double(s.group) + eps));
                    rp[r * s.groups + g] = rs;
                    for (int64_t i = 0; i < s.group; ++i)
                        yp[c0 + i] = yp[c0 + i] * rs * w[g * s.group + i];
                }
            }
        }
    });
}

void CpuBackend::gated_rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& z,
                                         const Tensor& weight, const Tensor& rstd,
                                         int64_t group_size, Tensor& dx, Tensor& dz,
                                         Tensor& dweight) {
    const char* op = "gated_rms_norm_backward";
    const GroupShape s = group_shape(op, x, z, weight, group_size);
    check_float_shape(op, "dy", dy, x.shape(), x.dtype());
    check_float_shape(op, "dx", dx, x.shape(), x.dtype());
    check_float_shape(op, "dz", dz, x.shape(), x.dtype());
    check_float_shape(op, "dweight", dweight, {s.cols}, x.dtype());
    MT_CHECK(rstd.numel() == s.rows * s.groups, op, ": rstd must hold ", s.rows * s.groups,
             " values, got ", rstd.describe());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *xp = in_t<T>(x), *zp = in_t<T>(z), *w = in_t<T>(weight), *g = in_t<T>(dy),
                *rp = in_t<T>(rstd);
        T *gx = out_t<T>(dx), *gz = out_t<T>(dz);
        // The normalised values u, kept for the weight grad: recomputing them there would take
        // each exp again.
        const Tensor u_kept = Tensor::empty({s.rows * s.cols}, x.dtype());
        T* up = out_t<T>(u_kept);
        // With u = x silu(z) rstd: du = dy w, d(x silu(z)) = rstd (du - u mean(du u)).
#pragma omp parallel if (s.rows * s.cols >= kParallelMin)
        {
            std::vector<T> e(size_t(s.group));
#pragma omp for schedule(static)
            for (int64_t r = 0; r < s.rows; ++r) {
                for (int64_t j = 0; j < s.groups; ++j) {
                    const int64_t c0 = r * s.cols + j * s.group;
                    const T rs = rp[r * s.groups + j];
                    silu_exps(zp + c0, s.group, e.data());
                    double dot = 0;
                    for (int64_t i = 0; i < s.group; ++i) {
                        const T u = xp[c0 + i] * k::Silu::fwd_given(zp[c0 + i], e[size_t(i)]) * rs;
                        up[c0 + i] = u;
                        dot += double(g[c0 + i] * w[j * s.group + i]) * u;
                    }
                    const T mean = T(dot / double(s.group));
                    for (int64_t i = 0; i < s.group; ++i) {
                        const T ei = e[size_t(i)];
                        const T sl = k::Silu::fwd_given(zp[c0 + i], ei);
                        const T dgate = rs * (g[c0 + i] * w[j * s.group + i] - up[c0 + i] * mean);
                        gx[c0 + i] = dgate * sl;
                        gz[c0 + i] = k::Silu::bwd_given(zp[c0 + i], dgate * xp[c0 + i], ei);
                    }
                }
            }
        }
        // dweight[c] += Σ_rows dy · u.
        detail::column_grads(
            s.rows, s.cols, g, [&](int64_t r, int64_t c) { return double(up[r * s.cols + c]); },
            out_t<T>(dweight), static_cast<T*>(nullptr));
    });
}

}  // namespace mt::cpu
