// What the CPU selective scan's two forms share: the problem's sizes, the raw pointers of its
// inputs and gradients (contiguous tensors of the shapes Backend::ssm_scan_forward documents),
// softplus, and the chunked form (ssm_scan_chunked.cpp) the recurrent one (ssm_scan.cpp) hands
// sequences to.
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

// The scan in chunks on GEMMs (SSD): y, and the final state into `state` (hp x N per row and
// head; S_0 on entry) when it is not null (S_0 = 0 then).
template <class T>
void chunked_scan_forward(const ScanShape& s, const ScanInputs<T>& in, T* y, T* state);

// Its backward from S_0 = 0.
template <class T>
void chunked_scan_backward(const ScanShape& s, const ScanInputs<T>& in, const T* dy,
                           const ScanGrads<T>& grads);

}  // namespace mt::cpu::ssm
