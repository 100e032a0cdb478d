// float -> bfloat16 over arrays at SIMD width, the build chosen at run time (AVX-512, AVX2, or
// portable; cpu_features(), MT_CPU_ISA=avx2 forces the AVX2 one): the casts of bf16 training (the
// optimizer's float32 main parameters into the model's bf16 ones every step, the bf16 tensors of
// ops that compute in float32), where the per-element NaN branch kept the loop scalar. Every build
// gives k::float_to_bf16's bits: round to nearest, ties to even, NaN a quiet NaN.
#pragma once

#include <cstdint>

#include "mt/api.h"

namespace mt::cpu {

// dst[i] = k::float_to_bf16(src[i]), i < n.
MT_API void narrow_to_bf16(const float* src, uint16_t* dst, int64_t n);

// Each build (narrow_to_bf16 runs the one this CPU has; the tests run them all): the AVX-512 one
// needs cpu_features().avx512f, the AVX2 one cpu_features().avx2.
MT_API void narrow_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n);
MT_API void narrow_to_bf16_avx2(const float* src, uint16_t* dst, int64_t n);
MT_API void narrow_to_bf16_portable(const float* src, uint16_t* dst, int64_t n);

}  // namespace mt::cpu
