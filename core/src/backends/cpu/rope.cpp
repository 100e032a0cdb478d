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

RopeTables CpuBackend::rope_tables(int64_t seq_len, const ops::RopeConfig& config, DType dtype) {
    MT_CHECK(dtype == DType::f32 || dtype == DType::f64,
             "rope_tables: dtype must be f32 or f64, got ", dtype_name(dtype));
    const bool f32 = dtype == DType::f32;
    const std::vector<double> inv = ops::rope_inverse_frequencies(config, f32);
    const int64_t half = int64_t(inv.size());
    const double interpolation = config.seq_len_interpolation_factor;
    RopeTables t{Tensor::empty({seq_len, half}, dtype), Tensor::empty({seq_len, half}, dtype),
                 config.interleaved};
    for (int64_t p = 0; p < seq_len; ++p)
        for (int64_t i = 0; i < half; ++i) {
            if (f32) {
                // Megatron: outer(arange(T, float32) * (1 / interpolation), inv_freq) in float32.
                float position = float(p);
                if (interpolation > 0) position *= float(1.0 / interpolation);
                const float angle = position * float(inv[size_t(i)]);
                t.cos.data<float>()[p * half + i] = std::cos(angle) * float(config.table_scale);
                t.sin.data<float>()[p * half + i] = std::sin(angle) * float(config.table_scale);
            } else {
                const double position = interpolation > 0 ? double(p) / interpolation : double(p);
                const double angle = position * inv[size_t(i)];
                t.cos.data<double>()[p * half + i] = std::cos(angle) * config.table_scale;
                t.sin.data<double>()[p * half + i] = std::sin(angle) * config.table_scale;
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
    // Pair i is (x[i], x[i + half]), or (x[2i], x[2i + 1]) when interleaved.
    const int64_t first_stride = tables.interleaved ? 2 : 1;
    const int64_t second_offset = tables.interleaved ? 1 : half;
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
                    const int64_t i1 = i * first_stride, i2 = i1 + second_offset;
                    F x1 = xr[i1], x2 = xr[i2];
                    yr[i1] = x1 * c[i] - sgn * x2 * s[i];
                    yr[i2] = x2 * c[i] + sgn * x1 * s[i];
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
