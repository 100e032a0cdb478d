// The Mixture-of-Experts settings of a transformer layer, as Megatron-core's TransformerConfig
// holds them (moe_* fields, from the --num-experts / --moe-* flags), and the expert groups the
// layer's experts and tokens are spread over.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/communicator.h"

namespace mt::nn {

// --moe-router-load-balancing-type.
enum class LoadBalancing : uint8_t { aux_loss, seq_aux_loss, sinkhorn, none };
// --moe-router-score-function.
enum class ScoreFunction : uint8_t { softmax, sigmoid };
// --moe-token-drop-policy: which tokens an expert over capacity keeps.
enum class DropPolicy : uint8_t { probs, position };
// --moe-token-dispatcher-type.
enum class DispatcherKind : uint8_t { allgather, alltoall };

// Megatron-DeepSpeed's MoE layers route with DeepSpeed's TopKGate (GShard's gating) instead of
// Megatron-core's router: softmax over all experts in f32; top-1 weighs the token by its expert's
// probability, top-2 by the two probabilities renormalised; an expert takes at most
// max(ceil(tokens / experts x factor x k), --moe-min-capacity) tokens of the micro-batch, top-1
// keeping a random subset of those over it (random token selection), top-2 the first by position
// (all first choices before the second ones); the loss E·Σ mean(probs)·mean(first choices).
struct GShardGating {
    bool enabled = false;
    double train_capacity_factor = 1.0;  // --moe-train-capacity-factor
    double eval_capacity_factor = 1.0;   // --moe-eval-capacity-factor
    int64_t min_capacity = 4;            // --moe-min-capacity
    bool drop_tokens = true;             // false: --disable-moe-token-dropping
    // Top-2: the second expert drawn with Gumbel noise (false:
    // --disable-moe-top2-2nd-expert-sampling, the second largest).
    bool sample_second_expert = true;
};

// Megatron-core's TopKRouter settings.
struct RouterConfig {
    int64_t num_experts = 0;
    int64_t topk = 2;  // --moe-router-topk
    ScoreFunction score_function = ScoreFunction::softmax;
    bool pre_softmax = false;        // --moe-router-pre-softmax: score all experts, then top-k
    int64_t num_groups = 0;          // --moe-router-num-groups (0: None)
    int64_t group_topk = 0;          // --moe-router-group-topk (0: no group-limited routing)
    double topk_scaling_factor = 0;  // --moe-router-topk-scaling-factor (0: None)
    LoadBalancing load_balancing = LoadBalancing::aux_loss;
    double aux_loss_coeff = 0;   // --moe-aux-loss-coeff
    double z_loss_coeff = 0;     // --moe-z-loss-coeff (0: None)
    double capacity_factor = 0;  // --moe-expert-capacity-factor (0: None, dropless)
    DropPolicy drop_policy = DropPolicy::probs;
    bool pad_to_capacity = false;  // --moe-pad-expert-input-to-capacity
    // --moe-router-enable-expert-bias: the router keeps a bias (experts, f32, its buffer
    // "router.expert_bias") added to the sigmoid scores the top-k chooses by, moved after every
    // iteration by --moe-router-bias-update-rate towards the experts that got fewer tokens.
    bool expert_bias = false;
    double bias_update_rate = 1e-3;
    // --moe-input-jitter-eps: in training, the router's input times U(1 - eps, 1 + eps) noise
    // (0: none).
    double input_jitter_eps = 0;
    // --moe-router-dtype: the logits (and the routing math) in f32 or f64; default: the model's
    // dtype (bf16 logits for a bf16 model, routed in f32).
    bool logits_in_f32 = false, logits_in_f64 = false;
    GShardGating gshard;  // Megatron-DeepSpeed's MoE layers
};

// Where a MoE layer's experts live: each of the `ep` ranks holds num_experts / ep.size() of them,
// each split over `etp` (fc1 by columns, fc2 by rows); `tp_ep` is both together (the allgather
// dispatcher's group). No groups: one process holds every expert whole.
struct ExpertParallel {
    Communicator* ep = nullptr;
    Communicator* etp = nullptr;
    Communicator* tp_ep = nullptr;

    int ep_size() const { return ep ? ep->size() : 1; }
    int ep_rank() const { return ep ? ep->rank() : 0; }
    int etp_size() const { return etp ? etp->size() : 1; }
};

struct MoeConfig {
    RouterConfig router;
    int64_t ffn_hidden_size = 0;         // --moe-ffn-hidden-size (each expert's)
    int64_t shared_expert_ffn_size = 0;  // --moe-shared-expert-intermediate-size (0: none)
    // --moe-grouped-gemm: Transformer Engine's GroupedLinear names ("experts.linear_fc1.weight<j>")
    // instead of SequentialMLP's ("experts.local_experts.<j>.linear_fc1.weight").
    bool grouped_gemm = false;
    // --moe-apply-probs-on-input (Llama 4, top-1 only): each token's routing weight scales its
    // input to the expert instead of the expert's activation.
    bool probs_on_input = false;
    // Megatron-DeepSpeed's --mlp-type residual (PR-MoE): a dense MLP beside the experts, the two
    // outputs mixed by softmax(coefficient(x)) ("<prefix>.mlp.residual_mlp.*",
    // "<prefix>.mlp.coefficient.{weight,bias}" (2, H)).
    bool residual_mlp = false;
    DispatcherKind dispatcher = DispatcherKind::allgather;
    // --calculate-per-token-loss: the auxiliary losses are scaled by the tokens (Megatron's
    // MoEAuxLossAutoScaler gets aux_loss * num_tokens), as the main loss is a sum.
    bool per_token_loss = false;
    ExpertParallel experts;
    // The tensor- and context-parallel group (Megatron's tp_cp): under sequence or context
    // parallelism each rank routes part of every sequence, and the router's losses count them all.
    Communicator* tp_cp = nullptr;

    bool enabled() const { return router.num_experts > 0; }
};

}  // namespace mt::nn
