#include "adamw_vector.h"

#include <immintrin.h>

#include "cpu_features.h"

namespace mt::cpu {

// Each lane runs k::AdamW::step: p *= decay; m lerps towards g (torch's two lerp forms);
// v = v b2 + ((1 - b2) g) g; p += (-step m) / (sqrt(v) / sqrt(1 - b2^t) + eps). The tails go
// through the scalar kernel, which computes the same bits.
__attribute__((target("avx512f"))) void adamw_update_avx512(const k::AdamW& adam, float* p,
                                                            const float* g, float grad_scale,
                                                            float* m, float* v, int64_t n) {
    const __m512 decay = _mm512_set1_ps(adam.decay), w = _mm512_set1_ps(adam.beta1_weight);
    const __m512 one_minus_w = _mm512_set1_ps(1.0f - adam.beta1_weight);
    const __m512 b2 = _mm512_set1_ps(adam.beta2), omb2 = _mm512_set1_ps(adam.one_minus_beta2);
    const __m512 bias2 = _mm512_set1_ps(adam.bias2_sqrt), eps = _mm512_set1_ps(adam.eps);
    const __m512 step = _mm512_set1_ps(adam.neg_step_size), scale = _mm512_set1_ps(grad_scale);
    const bool small_weight = adam.beta1_weight < 0.5f;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), scale);
        const __m512 mi = _mm512_loadu_ps(m + i), vi = _mm512_loadu_ps(v + i);
        const __m512 diff = _mm512_sub_ps(gi, mi);
        const __m512 mn = small_weight ? _mm512_add_ps(mi, _mm512_mul_ps(w, diff))
                                       : _mm512_sub_ps(gi, _mm512_mul_ps(diff, one_minus_w));
        const __m512 vn =
            _mm512_add_ps(_mm512_mul_ps(vi, b2), _mm512_mul_ps(_mm512_mul_ps(omb2, gi), gi));
        const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vn), bias2), eps);
        const __m512 pi = _mm512_mul_ps(_mm512_loadu_ps(p + i), decay);
        _mm512_storeu_ps(p + i, _mm512_add_ps(pi, _mm512_div_ps(_mm512_mul_ps(step, mn), denom)));
        _mm512_storeu_ps(m + i, mn);
        _mm512_storeu_ps(v + i, vn);
    }
    adamw_update_portable(adam, p + i, g + i, grad_scale, m + i, v + i, n - i);
}

__attribute__((target("avx2"))) void adamw_update_avx2(const k::AdamW& adam, float* p,
                                                       const float* g, float grad_scale, float* m,
                                                       float* v, int64_t n) {
    const __m256 decay = _mm256_set1_ps(adam.decay), w = _mm256_set1_ps(adam.beta1_weight);
    const __m256 one_minus_w = _mm256_set1_ps(1.0f - adam.beta1_weight);
    const __m256 b2 = _mm256_set1_ps(adam.beta2), omb2 = _mm256_set1_ps(adam.one_minus_beta2);
    const __m256 bias2 = _mm256_set1_ps(adam.bias2_sqrt), eps = _mm256_set1_ps(adam.eps);
    const __m256 step = _mm256_set1_ps(adam.neg_step_size), scale = _mm256_set1_ps(grad_scale);
    const bool small_weight = adam.beta1_weight < 0.5f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), scale);
        const __m256 mi = _mm256_loadu_ps(m + i), vi = _mm256_loadu_ps(v + i);
        const __m256 diff = _mm256_sub_ps(gi, mi);
        const __m256 mn = small_weight ? _mm256_add_ps(mi, _mm256_mul_ps(w, diff))
                                       : _mm256_sub_ps(gi, _mm256_mul_ps(diff, one_minus_w));
        const __m256 vn =
            _mm256_add_ps(_mm256_mul_ps(vi, b2), _mm256_mul_ps(_mm256_mul_ps(omb2, gi), gi));
        const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vn), bias2), eps);
        const __m256 pi = _mm256_mul_ps(_mm256_loadu_ps(p + i), decay);
        _mm256_storeu_ps(p + i, _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(step, mn), denom)));
        _mm256_storeu_ps(m + i, mn);
        _mm256_storeu_ps(v + i, vn);
    }
    adamw_update_portable(adam, p + i, g + i, grad_scale, m + i, v + i, n - i);
}

void adamw_update_portable(const k::AdamW& adam, float* p, const float* g, float grad_scale,
                           float* m, float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) adam.step(p[i], g[i] * grad_scale, m[i], v[i]);
}

void adamw_update(const k::AdamW& adam, float* p, const float* g, float grad_scale, float* m,
                  float* v, int64_t n) {
    using UpdateFn =
        void (*)(const k::AdamW&, float*, const float*, float, float*, float*, int64_t);
    static const UpdateFn fn = cpu_features().avx512f ? adamw_update_avx512
                               : cpu_features().avx2  ? adamw_update_avx2
                                                      : adamw_update_portable;
    fn(adam, p, g, grad_scale, m, v, n);
}

}  // namespace mt::cpu
