// Decoding attention's two inner loops over a run of cached keys and values (rows `stride` floats
// apart): one query's scaled dot products with each key, and the values summed with weights. On
// AVX-512 sixteen keys' products are reduced together (one transposing tree instead of sixteen
// horizontal sums), on AVX2 eight; the portable build takes each key alone. exp_shifted's
// dispatch: the build this CPU has (MT_CPU_ISA can withhold the wider ones), each exported so
// the tests run all of them.
#pragma once

#include <cstdint>

#include "mt/api.h"

namespace mt::cpu {

// p[s] = scale * (q . k[s * stride ...]) for s < keys, each a hd-long dot product.
void key_dots(const float* q, const float* k, int64_t stride, int64_t keys, int64_t hd, float scale,
              float* p);
// o[i] += sum over s < keys of w[s] * v[s * stride + i], i < hd, the keys in order.
void weighted_values(const float* w, const float* v, int64_t stride, int64_t keys, int64_t hd,
                     float* o);

MT_API void key_dots_avx512(const float* q, const float* k, int64_t stride, int64_t keys,
                            int64_t hd, float scale, float* p);
MT_API void key_dots_avx2(const float* q, const float* k, int64_t stride, int64_t keys, int64_t hd,
                          float scale, float* p);
MT_API void key_dots_portable(const float* q, const float* k, int64_t stride, int64_t keys,
                              int64_t hd, float scale, float* p);
MT_API void weighted_values_avx512(const float* w, const float* v, int64_t stride, int64_t keys,
                                   int64_t hd, float* o);
MT_API void weighted_values_avx2(const float* w, const float* v, int64_t stride, int64_t keys,
                                 int64_t hd, float* o);
MT_API void weighted_values_portable(const float* w, const float* v, int64_t stride, int64_t keys,
                                     int64_t hd, float* o);

}  // namespace mt::cpu
