#include "bf16_narrow.h"

#include <immintrin.h>

#include "cpu_features.h"
#include "mt/kernels/bf16.h"

namespace mt::cpu {

namespace {

__attribute__((target("avx2"))) inline __m256i narrow8(__m256i x) {
    // |x| and infinity's bits are below 2^31: the signed compare is the unsigned one.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), odd)), 16);
    const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quieted, nan);
}

}  // namespace

// k::float_to_bf16 on each 32-bit lane: x + 0x7FFF + bit 16 of x, the top half kept; a NaN
// (|x| above infinity's bits) keeps its top half with the quiet bit set instead.
__attribute__((target("avx512f"))) void narrow_to_bf16_avx512(const float* src, uint16_t* dst,
                                                              int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const __m512i round = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
    const __m512i quiet = _mm512_set1_epi32(0x40);
    // The maskz forms with every lane set: GCC 12's unmasked ones warn of an uninitialised source.
    constexpr __mmask16 kAll = 0xFFFF;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i x = _mm512_loadu_si512(src + i);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, abs_mask), inf);
        const __m512i odd = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, x, 16), one);
        const __m512i rounded =
            _mm512_maskz_srli_epi32(kAll, _mm512_add_epi32(x, _mm512_add_epi32(round, odd)), 16);
        const __m512i quieted = _mm512_or_si512(_mm512_maskz_srli_epi32(kAll, x, 16), quiet);
        const __m512i bits = _mm512_mask_blend_epi32(nan, rounded, quieted);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_maskz_cvtepi32_epi16(kAll, bits));
    }
    narrow_to_bf16_portable(src + i, dst + i, n - i);
}

__attribute__((target("avx2"))) void narrow_to_bf16_avx2(const float* src, uint16_t* dst,
                                                         int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = narrow8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
        const __m256i b =
            narrow8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
        // Lanes hold values below 2^16: the unsigned saturating pack keeps them; it packs per
        // 128-bit half, which the permute puts back in order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
    }
    narrow_to_bf16_portable(src + i, dst + i, n - i);
}

void narrow_to_bf16_portable(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = k::float_to_bf16(src[i]);
}

void narrow_to_bf16(const float* src, uint16_t* dst, int64_t n) {
    using NarrowFn = void (*)(const float*, uint16_t*, int64_t);
    static const NarrowFn fn = cpu_features().avx512f ? narrow_to_bf16_avx512
                               : cpu_features().avx2  ? narrow_to_bf16_avx2
                                                      : narrow_to_bf16_portable;
    fn(src, dst, n);
}

}  // namespace mt::cpu
