// Global gradient-norm clipping as Megatron does it (--clip-grad): the L2 norm over all
// gradients, then every gradient scaled by max_norm / (norm + 1e-6) when that is below 1.
#pragma once

#include <span>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace mt::optim {

// sqrt(sum of squares) over every element of every tensor (on `backend`, any layout),
// accumulated in double.
MT_API double global_l2_norm(Backend& backend, std::span<const Tensor> grads);

// Scales the gradients in place when they exceed max_norm; returns the factor applied (1 when
// none). total_norm is global_l2_norm(grads) (callers log it as "grad norm").
MT_API double clip_by_total_norm(Backend& backend, std::span<Tensor> grads, double max_norm,
                                 double total_norm);

}  // namespace mt::optim
