// Matrix products for the layers in f32 or f64: f32 goes to the Backend's GEMM (OpenBLAS on the
// CPU, cuBLAS in the plugin); f64 (the finite-difference checks of mt::nn) uses CPU BLAS dgemm.
#pragma once

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace mt::ops {

// c = op(a) @ op(b) + beta * c for 2-D row-major tensors of one dtype (f32 or f64).
MT_API void matmul(Backend& backend, Transpose ta, Transpose tb, const Tensor& a, const Tensor& b,
                   float beta, Tensor& c);

}  // namespace mt::ops
