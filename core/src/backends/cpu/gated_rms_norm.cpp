// CPU gated group RMSNorm of Mamba-2 (f32 and f64): one OpenMP task per row for y, rstd, dx and
// dz; detail::column_grads for the weight grad.
#include <algorithm>
#include <cmath>

#include "cpu_backend.h"
#include "mt/kernels/activations.h"
#include "op_support.h"

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
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
        for (int64_t r = 0; r < s.rows; ++r) {
            for (int64_t g = 0; g < s.groups; ++g) {
                const int64_t c0 = r * s.cols + g * s.group;
                double ss = 0;
                for (int64_t i = 0; i < s.group; ++i) {
                    const T gv = xp[c0 + i] * k::Silu{}.fwd(zp[c0 + i]);
                    yp[c0 + i] = gv;
                    ss += double(gv) * gv;
                }
                const T rs = T(1.0 / std::sqrt(ss / double(s.group) + eps));
                rp[r * s.groups + g] = rs;
                for (int64_t i = 0; i < s.group; ++i)
                    yp[c0 + i] = yp[c0 + i] * rs * w[g * s.group + i];
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
        // With u = x silu(z) rstd: du = dy w, d(x silu(z)) = rstd (du - u mean(du u)).
#pragma omp parallel for schedule(static) if (s.rows * s.cols >= kParallelMin)
        for (int64_t r = 0; r < s.rows; ++r) {
            for (int64_t j = 0; j < s.groups; ++j) {
                const int64_t c0 = r * s.cols + j * s.group;
                const T rs = rp[r * s.groups + j];
                double dot = 0;
                for (int64_t i = 0; i < s.group; ++i) {
                    const T u = xp[c0 + i] * k::Silu{}.fwd(zp[c0 + i]) * rs;
                    dot += double(g[c0 + i] * w[j * s.group + i]) * u;
                }
                const T mean = T(dot / double(s.group));
                for (int64_t i = 0; i < s.group; ++i) {
                    const T sl = k::Silu{}.fwd(zp[c0 + i]);
                    const T u = xp[c0 + i] * sl * rs;
                    const T dgate = rs * (g[c0 + i] * w[j * s.group + i] - u * mean);
                    gx[c0 + i] = dgate * sl;
                    gz[c0 + i] = k::Silu{}.bwd(zp[c0 + i], dgate * xp[c0 + i]);
                }
            }
        }
        // dweight[c] += Σ_rows dy · u, u = x silu(z) rstd of the column's group.
        detail::column_grads(
            s.rows, s.cols, g,
            [&](int64_t r, int64_t c) {
                const int64_t at = r * s.cols + c;
                return double(xp[at] * k::Silu{}.fwd(zp[at]) * rp[r * s.groups + c / s.group]);
            },
            out_t<T>(dweight), static_cast<T*>(nullptr));
    });
}

}  // namespace mt::cpu
