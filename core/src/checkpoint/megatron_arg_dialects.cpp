// The args of other Megatrons under core_v0.13's names (mt/checkpoint/checkpoint_args.h
// as_core_v013_args): a newer Megatron-LM's renamed fields, read from both versions' flag lists,
// and Megatron-DeepSpeed's spelling of the same model (its megatron/arguments.py).
#include <map>
#include <string>
#include <string_view>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/cli/megatron_flags.h"
#include "mt/error.h"

namespace mt {

namespace {

void add_if_absent(CheckpointArgs& args, const std::string& name, ArgValue value) {
    if (!find_arg(args, name)) args.emplace_back(name, std::move(value));
}

void add_older_names(CheckpointArgs& args) {
    std::map<std::string_view, const cli::MegatronFlag*> older;
    for (const cli::MegatronFlag& f : cli::megatron_flags()) older[f.flag] = &f;
    for (const cli::MegatronFlag& f : cli::newer_megatron_flags()) {
        const auto it = older.find(f.flag);
        if (it == older.end() || it->second->dest == f.dest) continue;
        const ArgValue* v = find_arg(args, f.dest);
        if (!v) continue;
        ArgValue value = *v;
        const bool flipped = (f.kind == "store_true" && it->second->kind == "store_false") ||
                             (f.kind == "store_false" && it->second->kind == "store_true");
        if (flipped && std::holds_alternative<bool>(value)) value = !std::get<bool>(value);
        add_if_absent(args, std::string(it->second->dest), std::move(value));
    }
}

void add_megatron_deepspeed_fields(CheckpointArgs& args) {
    if (!find_arg(args, "deepspeed")) return;  // Megatron-LM's args have no such field
    // num_experts: DeepSpeed's MoE layers (with expert_interval, which its args always have),
    // one count per MoE layer; [1] is a dense model.
    if (const ArgValue* experts = find_arg(args, "num_experts"))
        if (const auto* list = std::get_if<std::vector<int64_t>>(experts)) {
            bool moe = false;
            for (int64_t n : *list) moe = moe || n > 1;
            if (!moe) set_arg(args, "num_experts", ArgValue{});
        }
    if (const ArgValue* norm = find_arg(args, "normalization");
        norm && std::holds_alternative<std::string>(*norm)) {
        const std::string& n = std::get<std::string>(*norm);
        if (n == "layernorm") set_arg(args, "normalization", std::string("LayerNorm"));
        if (n == "rmsnorm") set_arg(args, "normalization", std::string("RMSNorm"));
    }
    if (const ArgValue* theta = find_arg(args, "rope_theta"))
        add_if_absent(args, "rotary_base", *theta);
    if (bool_arg(args, "use_rotary_position_embeddings"))
        add_if_absent(args, "position_embedding_type", std::string("rope"));
    const auto heads = int_arg(args, "num_attention_heads");
    const auto kv_heads = int_arg(args, "num_key_value_heads");
    if (heads && kv_heads && *kv_heads != *heads) {
        add_if_absent(args, "group_query_attention", true);
        add_if_absent(args, "num_query_groups", *kv_heads);
    }
}

}  // namespace

void as_core_v013_args(CheckpointArgs& args) {
    add_older_names(args);
    add_megatron_deepspeed_fields(args);
}

}  // namespace mt
