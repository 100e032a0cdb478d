// CPU traversal of RoPE: one (batch, position) row of heads per OpenMP task.
#include "cpu_backend.h"

#include <cmath>

#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

RopeTables CpuBackend::rope_tables(int64_t seq_len, int64_t rotary_dim, double base, DType dtype) {
    MT_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0,
             "rope_tables: rotary dim must be even and > 0, got ", rotary_dim);
    MT_CHECK(dtype == DType::f32 || dtype == DType::f64,
             "rope_tables: dtype must be f32 or f64, got ", dtype_name(dtype));
    const int64_t half = rotary_dim / 2;
    RopeTables t{Tensor::empty({seq_len, half}, dtype), Tensor::empty({seq_len, half}, dtype)};
    for (int64_t p = 0; p < seq_len; ++p)
        for (int64_t i = 0; i < half; ++i) {
            if (dtype == DType::f32) {
                // Megatron: inv_freq = 1.0 / base ** (arange(0, R, 2, float32) / R), then
                // outer(arange(T, float32), inv_freq), all in float32.
                float inv = 1.0f / std::pow(float(base), float(2 * i) / float(rotary_dim));
                float angle = float(p) * inv;
                t.cos.data<float>()[p * half + i] = std::cos(angle);
                t.sin.data<float>()[p * half + i] = std::sin(angle);
            } else {
                double angle = double(p) / std::pow(base, double(2 * i) / double(rotary_dim));
                t.cos.data<double>()[p * half + i] = std::cos(angle);
                t.sin.data<double>()[p * half + i] = std::sin(angle);
            }
        }
    return t;
}

namespace {

// y = rotate(x) by +angle (sign = 1) or -angle (sign = -1).
void rotate(const char* op, const Tensor& x, const RopeTables& tables, Tensor& y, int sign) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() == 4, op, ": x must be (B, T, heads, D), got ", x.describe());
    const int64_t B = x.size(0), T = x.size(1), heads = x.size(2), D = x.size(3);
    MT_CHECK(tables.cos.dim() == 2 && tables.cos.size(0) >= T && 2 * tables.cos.size(1) <= D, op,
             ": tables ", tables.cos.describe(), " do not cover x ", x.describe());
    const int64_t half = tables.cos.size(1);
    check_float_shape(op, "cos", tables.cos, tables.cos.shape(), x.dtype());
    check_float_shape(op, "sin", tables.sin, tables.cos.shape(), x.dtype());
    check_float_shape(op, "y", y, x.shape(), x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using F = decltype(tag);
        const F *xp = in_t<F>(x), *cp = in_t<F>(tables.cos), *sp = in_t<F>(tables.sin);
        F* yp = out_t<F>(y);
        const F sgn = F(sign);
#pragma omp parallel for schedule(static) if (x.numel() >= kParallelMin)
        for (int64_t bt = 0; bt < B * T; ++bt) {
            const int64_t t = bt % T;
            const F *c = cp + t * half, *s = sp + t * half;
            for (int64_t h = 0; h < heads; ++h) {
                const F* xr = xp + (bt * heads + h) * D;
                F* yr = yp + (bt * heads + h) * D;
                for (int64_t i = 0; i < half; ++i) {
                    F x1 = xr[i], x2 = xr[i + half];
                    yr[i] = x1 * c[i] - sgn * x2 * s[i];
                    yr[i + half] = x2 * c[i] + sgn * x1 * s[i];
                }
                for (int64_t j = 2 * half; j < D; ++j) yr[j] = xr[j];
            }
        }
    });
}

}  // namespace

void CpuBackend::rope_forward(const Tensor& x, const RopeTables& tables, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        rope_forward(h.in(x), tables, h.out(y));
        return h.finish();
    }
    rotate("rope_forward", x, tables, y, 1);
}

void CpuBackend::rope_backward(const Tensor& dy, const RopeTables& tables, Tensor& dx) {
    if (any_half({&dy, &dx})) {
        HalfAsFloat h;
        rope_backward(h.in(dy), tables, h.out(dx));
        return h.finish();
    }
    rotate("rope_backward", dy, tables, dx, -1);
}

}  // namespace mt::cpu
