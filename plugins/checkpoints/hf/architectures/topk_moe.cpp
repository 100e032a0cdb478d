// The top-k softmax MoE of Mixtral-like folders <-> Megatron's MoE flags and args.
#include "topk_moe.h"

#include <algorithm>
#include <variant>
#include <vector>

namespace mt::plugins::hf {

void read_topk_experts(const ConfigJson& j, const char* experts_key, HfConfig& c) {
    c.num_experts = j.integer(experts_key);
    c.experts_per_token = j.integer("num_experts_per_tok");
    MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 && c.experts_per_token <= c.num_experts,
             j.where(), ": 'num_experts_per_tok' (", c.experts_per_token, ") must be in [1, '",
             experts_key, "' (", c.num_experts, ")]");
}

void put_topk_moe_args(const HfConfig& c, ModelArgs& a) {
    a["num-experts"] = std::to_string(c.num_experts);
    a["moe-router-topk"] = std::to_string(c.experts_per_token);
    a["moe-ffn-hidden-size"] = std::to_string(c.ffn_hidden_size);
}

void read_topk_moe_args(const SaverArgs& a, const std::string& why, HfConfig& c) {
    c.num_experts = a.integer("num_experts");
    c.experts_per_token = a.integer("moe_router_topk", 2);
    c.ffn_hidden_size = a.integer("moe_ffn_hidden_size", c.ffn_hidden_size);
    if (const ArgValue* freq = a.find("moe_layer_freq")) {
        const bool every = std::holds_alternative<int64_t>(*freq) && std::get<int64_t>(*freq) == 1;
        const auto* list = std::get_if<std::vector<int64_t>>(freq);
        if (!every &&
            !(list && std::all_of(list->begin(), list->end(), [](int64_t f) { return f == 1; })))
            not_supported("moe_layer_freq", "not every layer", why);
    }
    if (a.set("moe_shared_expert_intermediate_size"))
        not_supported("moe_shared_expert_intermediate_size",
                      std::to_string(a.integer("moe_shared_expert_intermediate_size")), why);
    if (a.text("moe_router_score_function", "softmax") != "softmax")
        not_supported("moe_router_score_function", a.text("moe_router_score_function", ""), why);
    for (const char* name :
         {"moe_router_topk_scaling_factor", "moe_router_group_topk", "moe_expert_capacity_factor"})
        if (a.set(name)) not_supported(name, "set", why);
    if (a.text("moe_router_load_balancing_type", "aux_loss") == "sinkhorn")
        not_supported("moe_router_load_balancing_type", "sinkhorn", why);
}

}  // namespace mt::plugins::hf
