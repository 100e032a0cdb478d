// The CUDA backend: device memory through the CUDA runtime, host<->device copies, and GEMM
// through cuBLAS. Elementwise and row kernels join as the layers that need them arrive.
#pragma once

#include <memory>

#include "mt/backend.h"

namespace mt::plugins::cuda {

// A backend on CUDA device `device_index`; throws mt::Error when there is no such device.
std::unique_ptr<Backend> make_cuda_backend(int device_index);

// Number of CUDA devices visible (0 when there is no driver or no GPU).
int device_count();

}  // namespace mt::plugins::cuda
