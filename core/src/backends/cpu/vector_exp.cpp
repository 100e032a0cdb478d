#include "vector_exp.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "cpu_features.h"

namespace mt::cpu {

namespace {

// Cephes' expf: exp(x) = 2^k exp(r), k = round(x log2 e), r = x - k ln 2 (ln 2 in two parts), and
// exp(r) = 1 + r + r^2 P(r) on |r| <= ln2 / 2.
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// Inputs are clamped to [kLow, kHigh]: exp(-104) rounds to 0 and exp(89) to +inf, and k stays in
// [-150, 128], whose halves are normal exponents.
constexpr float kLow = -104.0f, kHigh = 89.0f;

__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
    const __m512 c = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLow)), _mm512_set1_ps(kHigh));
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(kLog2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Hi), c);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kP[0]);
    for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP[i]));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512i ki = _mm512_cvtps_epi32(k), k1 = _mm512_srai_epi32(ki, 1);
    const __m512i k2 = _mm512_sub_epi32(ki, k1), bias = _mm512_set1_epi32(127);
    const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k1, bias), 23));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k2, bias), 23));
    const __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);  // NaN stays
}

__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
    const __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLow)), _mm256_set1_ps(kHigh));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Hi), c);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Lo), r);
    __m256 p = _mm256_set1_ps(kP[0]);
    for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP[i]));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i ki = _mm256_cvtps_epi32(k), k1 = _mm256_srai_epi32(ki, 1);
    const __m256i k2 = _mm256_sub_epi32(ki, k1), bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays
}

}  // namespace

// The builds' loops: whole vectors, then the tail through a zero-padded vector (its padding's
// exp(shift) is left out of the sums).
__attribute__((target("avx512f"))) float exp_shifted_avx512(const float* x, float shift, float* y,
                                                            int64_t n) {
    const __m512 s = _mm512_set1_ps(shift);
    __m512 sum = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 e = exp16(_mm512_add_ps(_mm512_loadu_ps(x + i), s));
        if (y) _mm512_storeu_ps(y + i, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        const __m512 e = exp16(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), s));
        if (y) _mm512_mask_storeu_ps(y + i, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) float exp_shifted_avx2(const float* x, float shift, float* y,
                                                           int64_t n) {
    const __m256 s = _mm256_set1_ps(shift);
    __m256 sum = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_add_ps(_mm256_loadu_ps(x + i), s));
        if (y) _mm256_storeu_ps(y + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, sum);
    float total = 0;
    for (float v : lanes) total += v;
    if (i < n) {
        alignas(32) float tail[8] = {};
        std::memcpy(tail, x + i, size_t(n - i) * sizeof(float));
        _mm256_store_ps(tail, exp8(_mm256_add_ps(_mm256_load_ps(tail), s)));
        for (int64_t j = 0; j < n - i; ++j) total += tail[j];
        if (y) std::memcpy(y + i, tail, size_t(n - i) * sizeof(float));
    }
    return total;
}

float exp_shifted_portable(const float* x, float shift, float* y, int64_t n) {
    float total = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(x[i] + shift);
        if (y) y[i] = e;
        total += e;
    }
    return total;
}

namespace {

using ExpFn = float (*)(const float*, float, float*, int64_t);

ExpFn exp_build() {
    static const ExpFn fn = cpu_features().avx512f ? exp_shifted_avx512
                            : cpu_features().avx2  ? exp_shifted_avx2
                                                   : exp_shifted_portable;
    return fn;
}

}  // namespace

float exp_shifted(const float* x, float shift, float* y, int64_t n) {
    return exp_build()(x, shift, y, n);
}

float sum_exp_shifted(const float* x, float shift, int64_t n) {
    return exp_build()(x, shift, nullptr, n);
}

}  // namespace mt::cpu
