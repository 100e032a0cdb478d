// The routing math of Megatron-core's TopKRouter (router.py, moe_utils.py), forward and backward,
// on host arrays: top-k (group-limited, with expert bias, pre- or post-softmax or sigmoid scores,
// scaling), capacity dropping and padding, sinkhorn, and the auxiliary losses (switch load
// balancing, per-sequence load balancing, z-loss). The router's logits are small (tokens x
// experts) and the dispatch needs the routing on the host anyway (its split sizes), so the
// routing runs there, in f32 as Megatron's router does (f64 with --moe-router-dtype fp64, and for
// f64 models, whose gradients the tests check by finite differences).
//
// Tokens are in Megatron's order, sequence-major ([s, b] flattened): the position drop policy and
// the per-sequence loss depend on it.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/nn/moe/config.h"

namespace mt::nn {

// What a routing decided, and what its backward needs.
struct Routing {
    int64_t tokens = 0, experts = 0;
    std::vector<double> probs;  // (tokens, experts): the weight of each token at each expert
    std::vector<uint8_t> map;   // (tokens, experts): 1 where the token goes to the expert
    std::vector<int64_t> tokens_per_expert;  // (experts): top-k choices before dropping
    // The auxiliary losses with their coefficients (0 when off): Megatron adds them to the
    // gradient and reports them divided by the coefficient.
    double aux_loss = 0, z_loss = 0;

    // For the backward.
    std::vector<int32_t> top;         // (tokens, topk): the chosen experts
    std::vector<double> top_values;   // (tokens, topk): the scores the probs were made from
    std::vector<double> scores;       // (tokens, experts): softmax / sigmoid of all logits
    std::vector<double> loss_scores;  // the aux loss's scores (compute_routing_scores_for_aux_loss)
    std::vector<double> loss_weights;  // d aux_loss / d loss_scores (tokens, experts)
    std::vector<double> lse;           // (tokens): the z-loss's log-sum-exp of each row
    double z_scale = 0;                // d z_loss / d lse_t² (coefficient over the tokens)
};

// The token-sequence shape and the group the sequence is split over (tensor parallel with
// sequence parallelism, context parallel): Megatron's sequence_partition_group, over which the
// load-balancing loss counts every part's tokens.
struct RoutingShape {
    int64_t seq = 0, batch = 0;                  // tokens = seq * batch
    Communicator* sequence_partition = nullptr;  // null: the whole sequence is here
};

// Routes `logits` (tokens, experts), row-major, as TopKRouter.routing does. `training`: the
// auxiliary losses are computed (and sinkhorn balances); `expert_bias` (experts) or empty;
// `f64`: computed in double, else in float as torch's float32 ops round. `uniforms` (tokens x
// experts, in (0, 1)): the random numbers of DeepSpeed's gate (config.gshard), or empty.
MT_API Routing route(const RouterConfig& config, const std::vector<double>& logits,
                     const RoutingShape& shape, const std::vector<double>& expert_bias,
                     bool training, bool f64, const std::vector<double>& uniforms = {});

// d logits (tokens, experts) of Σ probs·dprobs + aux_scale · (aux_loss + z_loss), for the routing
// `r` of `logits`: aux_scale is Megatron's MoEAuxLossAutoScaler scale (the main loss's backward
// scale).
MT_API std::vector<double> route_backward(const RouterConfig& config,
                                          const std::vector<double>& logits, const Routing& r,
                                          const std::vector<double>& dprobs, double aux_scale,
                                          bool f64);

// Megatron's get_capacity: ceil(tokens / experts · factor).
MT_API int64_t expert_capacity(int64_t tokens, int64_t experts, double factor);

}  // namespace mt::nn
