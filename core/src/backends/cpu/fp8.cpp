// FP8 emulation on the CPU: the absolute maximum a current-scaling recipe derives its scale from,
// and the quantize-and-read-back of an operand (Transformer Engine's cast: x * scale in f32,
// rounded to nearest even into E4M3 / E5M2, saturated at the largest finite value), by one scale
// or by a power of two per block (MXFP8's and the blockwise recipe's).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

inline float from_bits(uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

// 2^e for a normal float's exponent (-126 <= e <= 127), from its bits (ldexp is a call).
inline float power_of_two(int e) {
    return from_bits(uint32_t(e + 127) << 23);
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

// TE's float_to_e8m0 (ptx_arch_spec.cuh, the pre-Blackwell path; Blackwell's cvt.rp.satfinite
// agrees): the biased exponent of v, rounded up when the mantissa is not 0, 254 at most.
inline uint32_t float_to_e8m0(float v) {
    if (std::isnan(v)) return 0xFF;
    if (std::isinf(v)) return 0xFE;
    if (v == 0.0f) return 0;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    uint32_t exponent = (bits >> 23) & 0xFFu;
    const uint32_t mantissa = bits & 0x7FFFFFu;
    if (mantissa > 0 && exponent != 0xFE && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent;
    return exponent;
}

// 2^(127 - e) (TE's exp2f_rcp) and 2^(e - 127) for an E8M0 exponent: NaN for 255, and 2^-127
// (subnormal) where power_of_two cannot reach.
inline float exp2_rcp(uint32_t e) {
    if (e == 0xFF) return from_bits(0x7FFFFFFFu);
    return e == 0xFE ? from_bits(0x00400000u) : power_of_two(127 - int(e));
}
inline float exp2_of(uint32_t e) {
    if (e == 0xFF) return from_bits(0x7FFFFFFFu);
    return e == 0 ? from_bits(0x00400000u) : power_of_two(int(e) - 127);
}

// The blockwise recipe's scale (TE's scale_from_amax_tensor with pow_2_scales, no epsilon):
// max / amax in f32, rounded down to a power of two; 1 for amax 0; 0 for an infinite amax; the
// f32 max (then rounded down) where the quotient overflows.
inline float power_of_two_scale(float amax, float max_finite) {
    if (amax == 0.0f) return 1.0f;
    if (std::isinf(amax)) return 0.0f;
    float scale = max_finite / amax;
    if (std::isnan(scale)) return scale;
    if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
    int exponent;
    std::frexp(scale, &exponent);
    return std::ldexp(1.0f, exponent - 1);
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

void CpuBackend::fp8_quantize_blocks(const Tensor& x, const ops::Fp8Blocks& blocks, Tensor& y) {
    if (any_half({&x})) {
        // (The blockwise recipe's overflowing scale, the input dtype's max, rounds down to 2^127
        // from bf16's max and f32's alike.)
        HalfAsFloat h;
        fp8_quantize_blocks(h.in(x), blocks, y);
        return;
    }
    check_f32("fp8_quantize_blocks", "x", x);
    check_f32_shape("fp8_quantize_blocks", "y", y, x.shape());
    MT_CHECK(x.dim() == 2 && blocks.rows >= 1 && blocks.cols >= 1,
             "fp8_quantize_blocks: a 2-D tensor in blocks, got ", shape_str(x.shape()));
    const int64_t rows = x.size(0), cols = x.size(1);
    const bool mx = blocks.scale == ops::Fp8Blocks::Scale::e8m0;
    MT_CHECK(!mx || (rows % blocks.rows == 0 && cols % blocks.cols == 0), "MXFP8: blocks of ",
             blocks.rows, " x ", blocks.cols,
             " need the tensor's dimensions to be multiples of them, got ", shape_str(x.shape()));
    const Fp8Layout f = layout(blocks.type);
    const float max_reciprocal = float(1.0 / double(f.max_finite));  // TE's max_norm_rcp
    const int64_t bands = (rows + blocks.rows - 1) / blocks.rows;
    const int64_t block_cols = (cols + blocks.cols - 1) / blocks.cols;
    const float* in = in_t<float>(x);
    float* out = out_t<float>(y);
    // A band of blocks.rows rows at a time, read along its rows (a block down a column is then
    // one column of a band): each block's amax, its scale, then the band quantized.
#pragma omp parallel if (rows * cols > kParallelMin)
    {
        const size_t n = size_t(block_cols);
        std::vector<float> amax(n), scale(n), back(n);
#pragma omp for schedule(static)
        for (int64_t band = 0; band < bands; ++band) {
            const int64_t r0 = band * blocks.rows, r1 = std::min(rows, r0 + blocks.rows);
            std::fill(amax.begin(), amax.end(), 0.0f);
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = in + r * cols;
                for (int64_t b = 0, c0 = 0; b < block_cols; ++b, c0 += blocks.cols) {
                    float a = amax[size_t(b)];
                    for (int64_t c = c0; c < std::min(cols, c0 + blocks.cols); ++c)
                        a = std::max(a, std::fabs(row[c]));
                    amax[size_t(b)] = a;
                }
            }
            for (size_t b = 0; b < amax.size(); ++b) {
                if (mx) {
                    const uint32_t e = float_to_e8m0(amax[b] * max_reciprocal);
                    scale[b] = exp2_rcp(e);
                    back[b] = exp2_of(e);
                } else {
                    scale[b] = power_of_two_scale(amax[b], f.max_finite);
                    back[b] = 1.0f / scale[b];
                }
            }
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = in + r * cols;
                float* row_out = out + r * cols;
                for (int64_t b = 0, c0 = 0; b < block_cols; ++b, c0 += blocks.cols) {
                    const float s = scale[size_t(b)], k = back[size_t(b)];
                    for (int64_t c = c0; c < std::min(cols, c0 + blocks.cols); ++c)
                        row_out[c] = round_fp8(row[c] * s, f) * k;
                }
            }
        }
    }
}

}  // namespace mt::cpu
