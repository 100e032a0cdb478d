// What the CPU selective scan's two forms share: the problem's sizes, the raw pointers of its
// inputs and gradients (contiguous tensors of the shapes Backend::ssm_scan_forward documents),
// softplus, a dot product, and the chunked form (ssm_scan_chunked.cpp) the entry points
// (ssm_scan.cpp) hand sequences to.
#pragma once

#include <cmath>
#include <cstdint>

namespace mt::cpu::ssm {

struct ScanShape {
    int64_t B, T, nh, hp, ng, N;
};

template <class T>
struct ScanInputs {
    const T *x, *dt, *B, *C, *dt_bias, *A_log, *D;
};

// dx, ddt, dB, dC overwritten; ddt_bias, dA_log, dD added to.
template <class T>
struct ScanGrads {
    T *dx, *ddt, *dB, *dC, *ddt_bias, *dA_log, *dD;
};

// Softplus as torch and Mamba's kernels compute it: the identity above 20.
template <class T>
T softplus(T v) {
    return v > T(20) ? v : std::log1p(std::exp(v));
}

#define MT_INLINE inline __attribute__((always_inline))

constexpr int kLanes = 16;

// Σ a[n] b[n] in kLanes interleaved partial sums merged pairwise: detail::fold_lanes' scheme,
// written out and always inlined so that each instruction-set build vectorises it (a shared
// template instance would be compiled once, for the baseline); the same order on every build.
template <class T>
MT_INLINE T dot(const T* a, const T* b, int64_t n) {
    T lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; ++i, ++l) lane[l] += a[i] * b[i];
    for (int w = kLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    return lane[0];
}

// The scan in chunks on GEMMs (SSD): y, and the final state into `state` (B, nh, hp, N), which
// holds S_0 on entry; a null `state` means S_0 = 0 and no final state kept.
template <class T>
void chunked_scan_forward(const ScanShape& s, const ScanInputs<T>& in, T* y, T* state);

// Its backward from S_0 = 0.
template <class T>
void chunked_scan_backward(const ScanShape& s, const ScanInputs<T>& in, const T* dy,
                           const ScanGrads<T>& grads);

}  // namespace mt::cpu::ssm
