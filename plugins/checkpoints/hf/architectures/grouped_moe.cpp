#include "architectures/grouped_moe.h"

#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_saver_args.h"
#include "mt/error.h"

namespace mt::plugins::hf {

void read_grouped_moe(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    GroupedMoe& moe = c.moe;
    c.num_experts = j.integer("n_routed_experts");
    c.experts_per_token = j.integer("num_experts_per_tok");
    moe.expert_ffn = j.integer("moe_intermediate_size");
    moe.scaling_factor = j.real("routed_scaling_factor", 1.0);
    if (moe.softmax) {
        // DeepseekV2TopkRouter: greedy needs no groups; group_limited_greedy scores a group by
        // its best expert, Megatron by the sum of its top num_experts_per_tok / topk_group.
        const std::string method = j.text("topk_method", "greedy");
        MT_CHECK(method == "greedy", where, ": not supported yet: 'topk_method' ", method,
                 " (DeepSeek-V2 ranks expert groups by their best expert, Megatron by the sum "
                 "of their top ones: only greedy routing converts exactly)");
        MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 &&
                     c.experts_per_token <= c.num_experts && moe.expert_ffn > 0,
                 where, ": bad MoE sizes (n_routed_experts ", c.num_experts,
                 ", num_experts_per_tok ", c.experts_per_token, ", moe_intermediate_size ",
                 moe.expert_ffn, ")");
        return;
    }
    moe.num_groups = j.integer("n_group", 1);
    moe.group_topk = j.integer("topk_group", 1);
    MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 && c.experts_per_token <= c.num_experts &&
                 moe.expert_ffn > 0 && moe.num_groups > 0 && c.num_experts % moe.num_groups == 0 &&
                 moe.group_topk > 0 && moe.group_topk <= moe.num_groups,
             where, ": bad MoE sizes (n_routed_experts ", c.num_experts, ", num_experts_per_tok ",
             c.experts_per_token, ", moe_intermediate_size ", moe.expert_ffn, ", n_group ",
             moe.num_groups, ", topk_group ", moe.group_topk, ")");
    MT_CHECK(moe.num_groups == 1 || c.experts_per_token == 2 * moe.group_topk, where,
             ": not supported yet: 'topk_group' ", moe.group_topk, " with 'num_experts_per_tok' ",
             c.experts_per_token, " over ", moe.num_groups,
             " groups (transformers scores a group by its top two experts, Megatron by its top "
             "num_experts_per_tok / topk_group)");
    const bool renormalised = j.boolean("norm_topk_prob", true);
    MT_CHECK(renormalised == (c.experts_per_token > 1), where,
             ": not supported yet: 'norm_topk_prob' ", renormalised ? 1 : 0, " with ",
             c.experts_per_token,
             " experts per token (Megatron renormalises sigmoid weights exactly when a token has "
             "more than one)");
}

void add_grouped_moe_args(const HfConfig& c, ModelArgs& a) {
    const GroupedMoe& moe = c.moe;
    a["num-experts"] = std::to_string(c.num_experts);
    a["moe-router-topk"] = std::to_string(c.experts_per_token);
    a["moe-ffn-hidden-size"] = std::to_string(moe.expert_ffn);
    if (moe.shared_ffn > 0)
        a["moe-shared-expert-intermediate-size"] = std::to_string(moe.shared_ffn);
    if (moe.softmax) {
        a["moe-router-score-function"] = "softmax";
        a["moe-router-pre-softmax"] = "";
    } else {
        a["moe-router-score-function"] = "sigmoid";
        a["moe-router-enable-expert-bias"] = "";
    }
    a["moe-router-topk-scaling-factor"] = number_text(moe.scaling_factor);
    if (moe.num_groups > 1) {
        a["moe-router-num-groups"] = std::to_string(moe.num_groups);
        a["moe-router-group-topk"] = std::to_string(moe.group_topk);
    }
}

void read_grouped_moe_args(const SaverArgs& a, HfConfig& c, const std::string& why,
                           bool softmax_allowed) {
    GroupedMoe& moe = c.moe;
    c.num_experts = a.integer("num_experts");
    c.experts_per_token = a.integer("moe_router_topk", 2);
    moe.expert_ffn = a.integer("moe_ffn_hidden_size", a.integer("ffn_hidden_size", 0));
    moe.shared_ffn = a.integer("moe_shared_expert_intermediate_size", 0);
    moe.num_groups = a.set("moe_router_num_groups") ? a.integer("moe_router_num_groups") : 1;
    moe.group_topk = a.set("moe_router_group_topk") ? a.integer("moe_router_group_topk") : 1;
    moe.scaling_factor = a.set("moe_router_topk_scaling_factor")
                             ? a.real("moe_router_topk_scaling_factor", 1.0)
                             : 1.0;
    const std::string score = a.text("moe_router_score_function", "softmax");
    moe.softmax = softmax_allowed && score == "softmax";
    if (moe.softmax) {
        // DeepseekV2TopkRouter's greedy routing: all experts' softmax, then the top k.
        if (!a.flag("moe_router_pre_softmax"))
            not_supported("moe_router_pre_softmax", "False",
                          "DeepSeek-V2 takes the top experts of the softmax over all of them");
        const char* greedy = "DeepSeek-V2's greedy routing has neither";
        if (a.flag("moe_router_enable_expert_bias"))
            not_supported("moe_router_enable_expert_bias", "True", greedy);
        if (moe.num_groups > 1)
            not_supported("moe_router_num_groups", std::to_string(moe.num_groups), greedy);
    } else {
        if (score != "sigmoid") not_supported("moe_router_score_function", score, why);
        if (!a.flag("moe_router_enable_expert_bias"))
            not_supported("moe_router_enable_expert_bias", "False", why);
        if (a.set("moe_router_pre_softmax")) not_supported("moe_router_pre_softmax", "set", why);
    }
    if (moe.num_groups > 1 && c.experts_per_token != 2 * moe.group_topk)
        not_supported("moe_router_group_topk", std::to_string(moe.group_topk),
                      "transformers scores an expert group by its top two experts");
    for (const char* name :
         {"moe_shared_expert_gate", "moe_expert_capacity_factor", "moe_use_legacy_grouped_gemm"})
        if (a.set(name)) not_supported(name, "set", why);
}

}  // namespace mt::plugins::hf
