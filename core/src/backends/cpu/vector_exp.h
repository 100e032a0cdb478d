// exp over float arrays at SIMD width, the build chosen at run time (AVX-512, AVX2 with FMA, or
// portable; cpu_features(), MT_CPU_ISA=avx2 forces the AVX2 one): the softmax rows of attention
// and the like, where libm's expf, one call per element, cost more than the GEMMs around it.
// Within 2 ulp of libm's expf for normal results (Cephes' degree-6 polynomial on the reduced
// argument, 2^k applied in two exact halves so that subnormal results round once); 0 below
// -103.97 (as expf), +inf above 88.72, NaN for NaN.
#pragma once

#include <cmath>
#include <cstdint>

#include "mt/api.h"
#include "mt/kernels/activations.h"

namespace mt::cpu {

// y[i] = exp(x[i] + shift), i < n; y may be x. Returns their sum (lane-wise partial sums, then
// added).
MT_API float exp_shifted(const float* x, float shift, float* y, int64_t n);
// The same sum, nothing stored.
MT_API float sum_exp_shifted(const float* x, float shift, int64_t n);

// e[i] = exp(arg(i)), i < n, at SIMD width: the exps an activation takes of its inputs
// (k::Gelu::exp_arg, k::Silu::exp_arg) for a block of them at once. In double (the kernels'
// reference precision) through libm, element by element.
template <class Arg>
void exps_of(int64_t n, float* e, Arg arg) {
    for (int64_t i = 0; i < n; ++i) e[i] = arg(i);
    exp_shifted(e, 0.0f, e, n);
}
template <class Arg>
void exps_of(int64_t n, double* e, Arg arg) {
    for (int64_t i = 0; i < n; ++i) e[i] = std::exp(arg(i));
}
// e[i] = exp(k::Silu::exp_arg(z[i])), i < n: the exps of SiLU's sigmoid (SwiGLU's gates, Mamba's
// gated norm).
template <class T>
void silu_exps(const T* z, int64_t n, T* e) {
    exps_of(n, e, [&](int64_t i) { return k::Silu::exp_arg(z[i]); });
}

// Each build (exp_shifted runs the one this CPU has; the tests run them all): the AVX-512 one
// needs cpu_features().avx512f, the AVX2 one cpu_features().avx2.
MT_API float exp_shifted_avx512(const float* x, float shift, float* y, int64_t n);
MT_API float exp_shifted_avx2(const float* x, float shift, float* y, int64_t n);
MT_API float exp_shifted_portable(const float* x, float shift, float* y, int64_t n);

}  // namespace mt::cpu
