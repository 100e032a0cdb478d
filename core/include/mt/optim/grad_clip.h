// Global gradient-norm clipping as Megatron does it (--clip-grad): the L2 norm over all
// gradients, then every gradient scaled by max_norm / (norm + 1e-6) when that is below 1 (the
// trainer hands that factor to the optimizer, which applies it as it reads each gradient: the
// same products, one pass over the gradients fewer).
#pragma once

#include <span>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace mt::optim {

// sqrt(sum of squares) over every element of every tensor (on `backend`, any layout),
// accumulated in double.
MT_API double global_l2_norm(Backend& backend, std::span<const Tensor> grads);

// The factor clipping scales the gradients by: max_norm / (total_norm + 1e-6) when below 1,
// else 1. total_norm is global_l2_norm(grads) (callers log it as "grad norm").
MT_API double clip_coefficient(double max_norm, double total_norm);

}  // namespace mt::optim
