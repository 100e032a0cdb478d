// The AdamW update of one parameter tensor on the CPU (f32, contiguous), as torch.optim.AdamW
// and Megatron's fused Adam (decoupled weight decay) compute it; the per-element step is
// mt/kernels/adam.h.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// Megatron's defaults (--lr has none; --adam-beta1/2, --adam-eps, --weight-decay).
struct AdamWConfig {
    double lr = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.01;
};

// Step `step` (1 for the first update) of param, with grad, exp_avg and exp_avg_sq all of one
// shape; param, exp_avg and exp_avg_sq are updated in place.
MT_API void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                       const AdamWConfig& config, int64_t step);

}  // namespace mt::ops
