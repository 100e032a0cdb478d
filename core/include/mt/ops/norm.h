// LayerNorm and RMSNorm over the last dimension of CPU tensors (f32 or f64, contiguous), forward
// and backward, in Megatron's definitions (mt/kernels/norms.h holds the math). The forward saves
// the per-row statistics the backward needs; parameter grads accumulate (+=), dx is overwritten.
#pragma once

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

struct NormConfig {
    float eps = 1e-5f;                 // --layernorm-epsilon, inside the square root
    bool zero_centered_gamma = false;  // --apply-layernorm-1p: the applied scale is weight + 1
};

// x (B,T,C) or any (..., C); weight, bias (C); y like x; mean, rstd (...) = x's leading dims.
//   y = (x - mean) * rstd * gamma + bias,  rstd = 1 / sqrt(var + eps)
MT_API void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const NormConfig& config, Tensor& y, Tensor& mean, Tensor& rstd);
// dy, x (..., C); mean, rstd from the forward. dx (..., C) overwritten; dweight, dbias (C) +=.
MT_API void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                const Tensor& mean, const Tensor& rstd, const NormConfig& config,
                                Tensor& dx, Tensor& dweight, Tensor& dbias);

// x (..., C); weight (C); y like x; rstd (...) = 1 / sqrt(mean(x^2) + eps).
//   y = x * rstd * gamma
MT_API void rms_norm_forward(const Tensor& x, const Tensor& weight, const NormConfig& config,
                             Tensor& y, Tensor& rstd);
// dx (..., C) overwritten; dweight (C) +=.
MT_API void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                              const Tensor& rstd, const NormConfig& config, Tensor& dx,
                              Tensor& dweight);

}  // namespace mt::ops
