// FP8 emulation on the CPU: the absolute maximum a current-scaling recipe derives its scale from,
// and the quantize-and-read-back of an operand (Transformer Engine's cast: x * scale in f32,
// rounded to nearest even into E4M3 / E5M2, saturated at the largest finite value).
#include <cmath>
#include <cstring>

#include "cpu_backend.h"
#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_f32;
using detail::check_f32_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;

namespace {

struct Fp8Layout {
    int mantissa_bits;
    int min_exponent;  // of the smallest normal value; subnormals share its quantum
    float max_finite;
};

Fp8Layout layout(ops::Fp8Type type) {
    return type == ops::Fp8Type::e4m3 ? Fp8Layout{3, -6, ops::fp8_max(type)}
                                     : Fp8Layout{2, -14, ops::fp8_max(type)};
}

// 2^e for a normal float's exponent (-126 <= e <= 127), from its bits (ldexp is a call).
inline float power_of_two(int e) {
    const uint32_t bits = uint32_t(e + 127) << 23;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

// v rounded to the nearest value of `f` (ties to even), saturated; NaN stays NaN.
inline float round_fp8(float v, const Fp8Layout& f) {
    if (!(std::fabs(v) < f.max_finite)) return std::isnan(v) ? v : std::copysign(f.max_finite, v);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const int exponent = std::max(int((bits >> 23) & 0xffu) - 127, f.min_exponent);
    // The spacing of representable values at v's exponent, and its inverse: powers of two, so
    // v * inverse is exact and rint (ties to even in the default rounding mode) does the rounding.
    const int q = exponent - f.mantissa_bits;  // in [-17, 125]: both powers are normal floats
    return std::rint(v * power_of_two(-q)) * power_of_two(q);
}

}  // namespace

double CpuBackend::abs_max(const Tensor& x) {
    if (any_half({&x})) {
        HalfAsFloat h;
        return abs_max(h.in(x));
    }
    check_f32("abs_max", "x", x);
    const float* p = in_t<float>(x);
    const int64_t n = x.numel();
    float best = 0;
    bool nan = false;
#pragma omp parallel for reduction(max : best) reduction(|| : nan) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
        best = std::max(best, std::fabs(p[i]));
        nan = nan || std::isnan(p[i]);
    }
    return nan ? std::nan("") : double(best);
}

void CpuBackend::fp8_quantize(const Tensor& x, float scale, ops::Fp8Type type, Tensor& y) {
    if (any_half({&x})) {
        HalfAsFloat h;
        fp8_quantize(h.in(x), scale, type, y);
        return;
    }
    check_f32("fp8_quantize", "x", x);
    check_f32_shape("fp8_quantize", "y", y, x.shape());
    const Fp8Layout f = layout(type);
    const float scale_inv = 1.0f / scale;  // TE's scale_inv, which the GEMM multiplies by
    const float* in = in_t<float>(x);
    float* out = out_t<float>(y);
    const int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = round_fp8(in[i] * scale, f) * scale_inv;
}

}  // namespace mt::cpu
