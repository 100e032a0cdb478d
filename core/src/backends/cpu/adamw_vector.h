// The AdamW update over float arrays at SIMD width, the build chosen at run time (AVX-512, AVX2,
// or portable; cpu_features(), MT_CPU_ISA=avx2 forces the AVX2 one): the optimizer's pass over
// every parameter, which one scalar square root and two divisions per element made compute-bound
// (T5-220M: 0.8 s an iteration where the memory traffic takes 0.35 s). Every build computes
// k::AdamW::step's operations in its order, without fused multiply-adds (the file is compiled
// with -ffp-contract=off), so all give the scalar kernel's bits.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/kernels/adam.h"

namespace mt::cpu {

// One AdamW step of n elements: p (param), m (exp_avg), v (exp_avg_sq) updated in place from the
// gradient g * grad_scale.
MT_API void adamw_update(const k::AdamW& adam, float* p, const float* g, float grad_scale, float* m,
                         float* v, int64_t n);

// Each build (adamw_update runs the one this CPU has; the tests run them all): the AVX-512 one
// needs cpu_features().avx512f, the AVX2 one cpu_features().avx2.
MT_API void adamw_update_avx512(const k::AdamW& adam, float* p, const float* g, float grad_scale,
                                float* m, float* v, int64_t n);
MT_API void adamw_update_avx2(const k::AdamW& adam, float* p, const float* g, float grad_scale,
                              float* m, float* v, int64_t n);
MT_API void adamw_update_portable(const k::AdamW& adam, float* p, const float* g, float grad_scale,
                                  float* m, float* v, int64_t n);

}  // namespace mt::cpu
