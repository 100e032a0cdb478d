#include "key_value_rows.h"

#include <immintrin.h>

#include "cpu_features.h"
#include "lane_dot.h"

namespace mt::cpu {

namespace {

// Sixteen vectors' sums as one vector, lane j the sum of v[j]: halves of the vectors added in a
// tree (blocks of 128 bits across pairs, then lanes within blocks), lanes put back in order.
__attribute__((target("avx512f"))) inline __m512 sums16(__m512 v[16]) {
    __m512 t[8], u[4], w[2];
    for (int j = 0; j < 8; ++j)  // t[j]: v[2j]'s 8 partial sums, then v[2j + 1]'s
        t[j] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0xEE));
    for (int j = 0; j < 4; ++j)  // u[j]: block b holds 4 partial sums of v[4j + b]
        u[j] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * j], t[2 * j + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * j], t[2 * j + 1], 0xDD));
    for (int j = 0; j < 2; ++j)  // w[j]: block c holds 2 of v[8j + c] and 2 of v[8j + 4 + c]
        w[j] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * j], u[2 * j + 1], 0x88),
                             _mm512_shuffle_ps(u[2 * j], u[2 * j + 1], 0xDD));
    // Lane 4c + i holds the sum of v[4i + c].
    const __m512 r =
        _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, r);
}

// Eight vectors' sums as one vector, lane j the sum of v[j].
__attribute__((target("avx2"))) inline __m256 sums8(__m256 v[8]) {
    const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    // a: per 128-bit half, the sums of v[0..3] over that half; b the same of v[4..7].
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

using KeyDots = void (*)(const float*, const float*, int64_t, int64_t, int64_t, float, float*);
using WeightedValues = void (*)(const float*, const float*, int64_t, int64_t, int64_t, float*);

}  // namespace

__attribute__((target("avx512f,fma"))) void key_dots_avx512(const float* q, const float* k,
                                                            int64_t stride, int64_t keys,
                                                            int64_t hd, float scale, float* p) {
    if (hd % 16 != 0) return key_dots_portable(q, k, stride, keys, hd, scale, p);
    int64_t s = 0;
    for (; s + 16 <= keys; s += 16) {
        __m512 acc[16];
        for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
        for (int64_t i = 0; i < hd; i += 16) {
            const __m512 x = _mm512_loadu_ps(q + i);
            for (int j = 0; j < 16; ++j)
                acc[j] = _mm512_fmadd_ps(x, _mm512_loadu_ps(k + (s + j) * stride + i), acc[j]);
        }
        _mm512_storeu_ps(p + s, _mm512_mul_ps(_mm512_set1_ps(scale), sums16(acc)));
    }
    for (; s < keys; ++s) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < hd; i += 16)
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(k + s * stride + i), acc);
        p[s] = scale * _mm512_reduce_add_ps(acc);
    }
}

__attribute__((target("avx2,fma"))) void key_dots_avx2(const float* q, const float* k,
                                                       int64_t stride, int64_t keys, int64_t hd,
                                                       float scale, float* p) {
    if (hd % 8 != 0) return key_dots_portable(q, k, stride, keys, hd, scale, p);
    int64_t s = 0;
    for (; s + 8 <= keys; s += 8) {
        __m256 acc[8];
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < hd; i += 8) {
            const __m256 x = _mm256_loadu_ps(q + i);
            for (int j = 0; j < 8; ++j)
                acc[j] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k + (s + j) * stride + i), acc[j]);
        }
        _mm256_storeu_ps(p + s, _mm256_mul_ps(_mm256_set1_ps(scale), sums8(acc)));
    }
    for (; s < keys; ++s) p[s] = scale * lane_dot(q, k + s * stride, hd);
}

void key_dots_portable(const float* q, const float* k, int64_t stride, int64_t keys, int64_t hd,
                       float scale, float* p) {
    for (int64_t s = 0; s < keys; ++s) p[s] = scale * lane_dot(q, k + s * stride, hd);
}

__attribute__((target("avx512f,fma"))) void weighted_values_avx512(const float* w, const float* v,
                                                                   int64_t stride, int64_t keys,
                                                                   int64_t hd, float* o) {
    if (hd % 16 != 0) return weighted_values_portable(w, v, stride, keys, hd, o);
    for (int64_t i = 0; i < hd; i += 16) {
        __m512 acc = _mm512_loadu_ps(o + i);
        for (int64_t s = 0; s < keys; ++s)
            acc = _mm512_fmadd_ps(_mm512_set1_ps(w[s]), _mm512_loadu_ps(v + s * stride + i), acc);
        _mm512_storeu_ps(o + i, acc);
    }
}

__attribute__((target("avx2,fma"))) void weighted_values_avx2(const float* w, const float* v,
                                                              int64_t stride, int64_t keys,
                                                              int64_t hd, float* o) {
    if (hd % 8 != 0) return weighted_values_portable(w, v, stride, keys, hd, o);
    for (int64_t i = 0; i < hd; i += 8) {
        __m256 acc = _mm256_loadu_ps(o + i);
        for (int64_t s = 0; s < keys; ++s)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(w[s]), _mm256_loadu_ps(v + s * stride + i), acc);
        _mm256_storeu_ps(o + i, acc);
    }
}

void weighted_values_portable(const float* w, const float* v, int64_t stride, int64_t keys,
                              int64_t hd, float* o) {
    for (int64_t s = 0; s < keys; ++s)
        for (int64_t i = 0; i < hd; ++i) o[i] += w[s] * v[s * stride + i];
}

void key_dots(const float* q, const float* k, int64_t stride, int64_t keys, int64_t hd, float scale,
              float* p) {
    static const KeyDots fn = cpu_features().avx512f ? key_dots_avx512
                              : cpu_features().avx2  ? key_dots_avx2
                                                     : key_dots_portable;
    fn(q, k, stride, keys, hd, scale, p);
}

void weighted_values(const float* w, const float* v, int64_t stride, int64_t keys, int64_t hd,
                     float* o) {
    static const WeightedValues fn = cpu_features().avx512f ? weighted_values_avx512
                                     : cpu_features().avx2  ? weighted_values_avx2
                                                            : weighted_values_portable;
    fn(w, v, stride, keys, hd, o);
}

}  // namespace mt::cpu
