#include "mt/nn/moe/args.h"

#include <sstream>

#include "deepspeed_moe_args.h"
#include "mt/error.h"
#include "mt/nn/transformer_args.h"

namespace mt::nn {

std::vector<FlagInfo> moe_flags() {
    return {
        value_flag("num-experts", "number of experts in each MoE layer (none: a dense model)"),
        value_flag("moe-layer-freq",
                   "which layers are MoE layers: every k-th, or a list expression such as "
                   "\"([1]*3+[0]*1)*2\"",
                   "1"),
        value_flag("moe-ffn-hidden-size",
                   "each expert's FFN hidden size (default --ffn-hidden-size)"),
        value_flag("moe-shared-expert-intermediate-size",
                   "FFN hidden size of the shared experts every token also goes through (none: no "
                   "shared experts)"),
        switch_flag("moe-shared-expert-overlap",
                    "overlap the shared experts with the token dispatch: the same results"),
        switch_flag(
            "moe-grouped-gemm",
            "the experts as one grouped GEMM (Transformer Engine's GroupedLinear parameter names)"),
        value_flag("moe-router-topk", "experts each token is routed to", "2"),
        switch_flag("moe-apply-probs-on-input",
                    "scale each token's expert input by its routing weight instead of the "
                    "expert's activation (Llama 4; --moe-router-topk 1)"),
        value_flag("moe-router-score-function", "softmax or sigmoid", "softmax"),
        switch_flag("moe-router-pre-softmax", "score all experts before the top-k"),
        value_flag("moe-router-num-groups", "expert groups for group-limited routing"),
        value_flag("moe-router-group-topk", "groups each token may use (group-limited routing)"),
        value_flag("moe-router-topk-scaling-factor", "scale of the top-k routing weights"),
        value_flag("moe-router-load-balancing-type", "aux_loss, seq_aux_loss, sinkhorn or none",
                   "aux_loss"),
        value_flag("moe-router-dtype",
                   "fp32 or fp64: the router's logits and routing (default: the "
                   "model's dtype)"),
        value_flag("moe-aux-loss-coeff", "coefficient of the load-balancing loss", "0.0"),
        value_flag("moe-z-loss-coeff", "coefficient of the router z-loss"),
        value_flag(
            "moe-expert-capacity-factor",
            "each expert takes at most factor x tokens x topk / experts tokens (none: dropless)"),
        value_flag("moe-token-drop-policy", "probs or position: which tokens over capacity drop",
                   "probs"),
        switch_flag("moe-pad-expert-input-to-capacity", "pad every expert's input to its capacity"),
        value_flag("moe-token-dispatcher-type", "allgather or alltoall", "allgather"),
        switch_flag("moe-router-enable-expert-bias",
                    "route by scores plus a per-expert bias that follows the load (DeepSeek-V3)"),
        value_flag("moe-router-bias-update-rate", "the expert bias's update rate", "0.001"),
        value_flag("moe-input-jitter-eps", "multiply the router's input by U(1-eps, 1+eps) noise"),
    };
}

void read_moe_args(const ModelArgsReader& f, TransformerArgs& c) {
    if (f.has("expert-interval") && f.has("num-experts")) return read_deepspeed_moe_args(f, c);
    const int64_t experts = f.integer("num-experts", 0);
    // Megatron: --num-experts 0 means a dense model.
    if (experts == 0) return;
    MT_CHECK(experts > 0, "--num-experts must be positive, got ", experts);
    MoeConfig& m = c.moe;
    RouterConfig& r = m.router;
    r.num_experts = experts;
    c.moe_layers = MoeLayerPattern::parse(f.has("moe-layer-freq") ? f.text("moe-layer-freq") : "1",
                                          c.num_layers);
    m.ffn_hidden_size = f.integer("moe-ffn-hidden-size", c.ffn_hidden_size);
    m.shared_expert_ffn_size = f.integer("moe-shared-expert-intermediate-size", 0);
    MT_CHECK(m.ffn_hidden_size > 0 && m.shared_expert_ffn_size >= 0,
             "--moe-ffn-hidden-size and --moe-shared-expert-intermediate-size must be positive");
    m.grouped_gemm = f.flag("moe-grouped-gemm");
    r.topk = f.integer("moe-router-topk", 2);
    MT_CHECK(r.topk > 0 && r.topk <= experts, "--moe-router-topk ", r.topk,
             ": must be in [1, --num-experts (", experts, ")]");
    r.score_function = f.choice("moe-router-score-function", "softmax",
                                {std::pair{"softmax", ScoreFunction::softmax},
                                 std::pair{"sigmoid", ScoreFunction::sigmoid}});
    r.pre_softmax = f.flag("moe-router-pre-softmax");
    r.num_groups = f.integer("moe-router-num-groups", 0);
    r.group_topk = f.integer("moe-router-group-topk", 0);
    r.topk_scaling_factor = f.real("moe-router-topk-scaling-factor", 0);
    m.probs_on_input = f.flag("moe-apply-probs-on-input");
    // Megatron's experts assert this.
    MT_CHECK(
        !m.probs_on_input || r.topk == 1,
        "`moe_apply_probs_on_input` only works with `moe_router_topk`=1 (got --moe-router-topk ",
        r.topk, ")");
    // core_v0.19's fourth kind, the loss over the global batch's expert loads.
    MT_CHECK(!f.has("moe-router-load-balancing-type") ||
                 f.text("moe-router-load-balancing-type") != "global_aux_loss",
             "--moe-router-load-balancing-type global_aux_loss: not supported yet: the global-batch "
             "auxiliary load-balancing loss");
    r.load_balancing = f.choice(
        "moe-router-load-balancing-type", "aux_loss",
        {std::pair{"aux_loss", LoadBalancing::aux_loss},
         std::pair{"seq_aux_loss", LoadBalancing::seq_aux_loss},
         std::pair{"sinkhorn", LoadBalancing::sinkhorn}, std::pair{"none", LoadBalancing::none}});
    if (f.has("moe-router-dtype")) {
        const std::string d = f.text("moe-router-dtype");
        MT_CHECK(d == "fp32" || d == "fp64", "--moe-router-dtype ", d,
                 ": supported are fp32 and fp64");
        r.logits_in_f32 = d == "fp32";
        r.logits_in_f64 = d == "fp64";
    }
    r.aux_loss_coeff = f.real("moe-aux-loss-coeff", 0.0);
    r.z_loss_coeff = f.real("moe-z-loss-coeff", 0.0);
    MT_CHECK(r.aux_loss_coeff >= 0 && r.z_loss_coeff >= 0,
             "--moe-aux-loss-coeff and --moe-z-loss-coeff must not be negative");
    // Megatron asserts this in sinkhorn_load_balancing.
    MT_CHECK(r.load_balancing != LoadBalancing::sinkhorn || r.aux_loss_coeff == 0,
             "--moe-router-load-balancing-type sinkhorn does not support --moe-aux-loss-coeff");
    // Megatron's TransformerConfig raises this: softmax over one score has a zero gradient.
    MT_CHECK(r.topk != 1 || r.score_function != ScoreFunction::softmax || r.pre_softmax ||
                 r.load_balancing == LoadBalancing::sinkhorn,
             "Please use --moe-router-pre-softmax when topk is 1.");
    r.capacity_factor = f.real("moe-expert-capacity-factor", 0);
    MT_CHECK(r.capacity_factor >= 0, "--moe-expert-capacity-factor must not be negative");
    r.drop_policy = f.choice(
        "moe-token-drop-policy", "probs",
        {std::pair{"probs", DropPolicy::probs}, std::pair{"position", DropPolicy::position}});
    r.pad_to_capacity = f.flag("moe-pad-expert-input-to-capacity");
    MT_CHECK(!r.pad_to_capacity || r.capacity_factor > 0,
             "--moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor");
    // (alltoall_seq, and core_v0.19's flex, whose DeepEP / HybridEP kernels move the same
    // tokens to the same experts, run as the all-to-all dispatcher.)
    m.dispatcher = f.choice("moe-token-dispatcher-type", "allgather",
                            {std::pair{"allgather", DispatcherKind::allgather},
                             std::pair{"alltoall", DispatcherKind::alltoall},
                             std::pair{"alltoall_seq", DispatcherKind::alltoall},
                             std::pair{"flex", DispatcherKind::alltoall}});
    r.expert_bias = f.flag("moe-router-enable-expert-bias");
    // Megatron's TransformerConfig asserts this.
    MT_CHECK(!r.expert_bias || r.score_function == ScoreFunction::sigmoid,
             "--moe-router-enable-expert-bias needs --moe-router-score-function sigmoid");
    r.bias_update_rate = f.real("moe-router-bias-update-rate", 1e-3);
    // Drawn from megatron-train's own counter-based stream (as its dropout), not torch's.
    r.input_jitter_eps = f.real("moe-input-jitter-eps", 0.0);
    MT_CHECK(r.input_jitter_eps >= 0 && r.input_jitter_eps < 1,
             "--moe-input-jitter-eps must be in [0, 1), got ", r.input_jitter_eps);
}

}  // namespace mt::nn
