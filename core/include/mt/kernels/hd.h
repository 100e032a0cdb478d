// MT_HD and the few math names the kernels use: every kernels/ header compiles with g++ alone
// (plain inline functions) and with nvcc (host + device), so the math is written once.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)  // nvcc, host or device pass
#define MT_HD __host__ __device__ __forceinline__
#else  // g++: no CUDA headers needed
#define MT_HD inline
#endif

// Overloads for float and double, so functors can be instantiated in double by the tests'
// finite-difference checks while float code calls the f-suffixed C functions.
namespace mt::k {

MT_HD float exp(float x) {
    return expf(x);
}
MT_HD double exp(double x) {
    return ::exp(x);
}
MT_HD float log(float x) {
    return logf(x);
}
MT_HD double log(double x) {
    return ::log(x);
}
MT_HD float tanh(float x) {
    return tanhf(x);
}
MT_HD double tanh(double x) {
    return ::tanh(x);
}
MT_HD float erf(float x) {
    return erff(x);
}
MT_HD double erf(double x) {
    return ::erf(x);
}
MT_HD float sqrt(float x) {
    return sqrtf(x);
}
MT_HD double sqrt(double x) {
    return ::sqrt(x);
}

// 1/sqrt(x): the device intrinsic on the GPU (about 2 ulp), the exact quotient on the host.
MT_HD float rsqrt(float x) {
#if defined(__CUDA_ARCH__)
    return rsqrtf(x);
#else
    return 1.0f / sqrtf(x);
#endif
}
MT_HD double rsqrt(double x) {
    return 1.0 / ::sqrt(x);
}

template <class T>
MT_HD T neg_inf() {
    return -static_cast<T>(INFINITY);
}

}  // namespace mt::k
