// DeepSpeed's TopKGate (top1gating / top2gating in deepspeed/moe/sharded_moe.py): the routing of
// Megatron-DeepSpeed's MoE layers (GShardGating), forward and backward, in f32 as DeepSpeed's
// gate computes. routing.cpp's route() and route_backward() call these for a RouterConfig whose
// gshard is enabled.
#pragma once

#include <vector>

#include "mt/nn/moe/routing.h"

namespace mt::nn {

// `logits` (tokens x experts, sequence-major); `uniforms` (the same shape, in (0, 1)) or empty:
// top-1's random token selection keys and top-2's Gumbel noise for its second expert (without
// them the first tokens by position stay, and the second expert is the second largest).
// r.scores keeps the softmax, r.top the chosen experts, r.loss_weights d aux_loss / d scores.
// In float as DeepSpeed's gate, or in double with `f64`.
Routing gshard_route(const RouterConfig& config, const std::vector<double>& logits,
                     const std::vector<double>& uniforms, bool training, bool f64);

// d logits of Σ probs·dprobs + aux_scale · aux_loss.
std::vector<double> gshard_route_backward(const RouterConfig& config, const Routing& r,
                                          const std::vector<double>& dprobs, double aux_scale);

}  // namespace mt::nn
