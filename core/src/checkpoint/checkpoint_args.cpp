#include "mt/checkpoint/checkpoint_args.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

#include "mt/cli/megatron_flags.h"

namespace mt {

namespace {

// A value as flag text; nullopt for None.
std::optional<std::string> text_of(const ArgValue& v) {
    if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
    if (std::holds_alternative<double>(v)) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", std::get<double>(v));
        return std::string(buf);
    }
    if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
    if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "true" : "false";
    if (const auto* list = std::get_if<std::vector<int64_t>>(&v)) return int_list_text(*list);
    if (const auto* list = std::get_if<std::vector<std::string>>(&v))
        return string_list_words(*list);
    return std::nullopt;
}

}  // namespace

std::string int_list_text(const std::vector<int64_t>& values) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
    return out + "]";
}

std::string string_list_words(const std::vector<std::string>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) out += (i ? " " : "") + values[i];
    return out;
}

std::string python_arg_name(std::string flag) {
    std::replace(flag.begin(), flag.end(), '-', '_');
    return flag;
}

std::string flag_arg_name(const FlagInfo& flag) {
    return flag.dest.empty() ? python_arg_name(flag.name) : flag.dest;
}

const ArgValue* find_arg(const CheckpointArgs& args, std::string_view name) {
    for (const auto& [k, v] : args)
        if (k == name) return &v;
    return nullptr;
}

std::optional<int64_t> int_arg(const CheckpointArgs& args, const std::string& name) {
    const ArgValue* v = find_arg(args, name);
    if (v && std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
    return std::nullopt;
}

bool megatron_mamba_model(const CheckpointArgs& args) {
    if (bool_arg(args, "is_hybrid_model")) return true;
    for (const char* ratio : {"hybrid_attention_ratio", "hybrid_mlp_ratio"})
        if (const ArgValue* v = find_arg(args, ratio))
            if (const double* d = std::get_if<double>(v); d && *d > 0) return true;
    for (const char* pattern : {"hybrid_override_pattern", "hybrid_layer_pattern"})
        if (const ArgValue* v = find_arg(args, pattern);
            v && std::holds_alternative<std::string>(*v))
            return true;
    if (const ArgValue* v = find_arg(args, "spec"))
        if (const auto* parts = std::get_if<std::vector<std::string>>(v))
            return std::find(parts->begin(), parts->end(),
                             "megatron.core.models.mamba.mamba_layer_specs") != parts->end();
    return false;
}

bool bool_arg(const CheckpointArgs& args, const std::string& name) {
    const ArgValue* v = find_arg(args, name);
    return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
}

bool core_v0_19_tokenizer_args(const CheckpointArgs& args) {
    return find_arg(args, "tokenizer_sentencepiece_legacy") != nullptr;
}

void set_arg(CheckpointArgs& args, const std::string& name, ArgValue value) {
    for (auto& [k, v] : args)
        if (k == name) {
            v = std::move(value);
            return;
        }
    args.emplace_back(name, std::move(value));
}

ModelArgs model_args_from_checkpoint(const CheckpointArgs& args,
                                     const std::vector<FlagInfo>& flags) {
    // What the family's flags do not carry must be Megatron's default, or the model would be
    // silently different.
    cli::check_checkpoint_model_args(args, flags);
    ModelArgs out;
    for (const FlagInfo& flag : flags) {
        if (!flag.store_false_dest.empty()) {
            const ArgValue* v = find_arg(args, flag.store_false_dest);
            if (v && std::holds_alternative<bool>(*v) && !std::get<bool>(*v)) out[flag.name] = "";
            continue;
        }
        const ArgValue* v = find_arg(args, flag_arg_name(flag));
        if (!v) continue;
        if (flag.is_switch) {
            if (std::holds_alternative<bool>(*v) && std::get<bool>(*v)) out[flag.name] = "";
            continue;
        }
        if (auto text = text_of(*v)) out[flag.name] = *text;
    }
    if (auto v = int_arg(args, "padded_vocab_size")) out["padded-vocab-size"] = std::to_string(*v);
    if (auto v = int_arg(args, "vocab_size")) out["vocab-size"] = std::to_string(*v);
    return out;
}

ModelArgs load_args_from_checkpoint(const ModelArgs& given, const CheckpointArgs& saved,
                                    const std::vector<FlagInfo>& flags) {
    // checkpointing.py's _set_arg calls (core_v0.13; core_v0.19 adds hybrid_layer_pattern).
    static const std::set<std::string_view> kUnlessGiven = {
        "num_layers",          "hidden_size", "ffn_hidden_size",        "seq_length",
        "num_attention_heads", "kv_channels", "max_position_embeddings"};
    static const std::set<std::string_view> kForced = {"num_query_groups",
                                                       "group_query_attention",
                                                       "position_embedding_type",
                                                       "add_position_embedding",
                                                       "use_rotary_position_embeddings",
                                                       "rotary_base",
                                                       "rotary_percent",
                                                       "rotary_interleaved",
                                                       "add_bias_linear",
                                                       "add_qkv_bias",
                                                       "squared_relu",
                                                       "swiglu",
                                                       "untie_embeddings_and_output_weights",
                                                       "apply_layernorm_1p",
                                                       "normalization",
                                                       "apply_query_key_layer_scaling",
                                                       "attention_dropout",
                                                       "hidden_dropout",
                                                       "hybrid_override_pattern",
                                                       "hybrid_layer_pattern",
                                                       "spec",
                                                       "hybrid_attention_ratio",
                                                       "hybrid_mlp_ratio",
                                                       "num_experts",
                                                       "moe_layer_freq",
                                                       "moe_ffn_hidden_size",
                                                       "moe_router_topk",
                                                       "moe_token_dispatcher_type",
                                                       "moe_router_pre_softmax",
                                                       "moe_grouped_gemm",
                                                       "moe_shared_expert_intermediate_size",
                                                       "mamba_state_dim",
                                                       "mamba_head_dim",
                                                       "mamba_num_groups",
                                                       "mamba_num_heads",
                                                       "is_hybrid_model"};
    // megatron.cpp's flags for Gemma's layers, which Megatron's parser has none of: taken as
    // its model args are, so that the checkpoint rebuilds the model it was saved from.
    static const std::set<std::string_view> kOurs = {
        "geglu", "post_sublayer_norm", "scale_embeddings", "rotary_base_local", "softmax_scale"};
    const ModelArgs from_checkpoint = model_args_from_checkpoint(saved, flags);
    ModelArgs out = given;
    for (const FlagInfo& flag : flags) {
        const bool inverted = !flag.store_false_dest.empty();
        const std::string dest = inverted ? flag.store_false_dest : flag_arg_name(flag);
        if (!kForced.count(dest) && !kOurs.count(dest) &&
            !(kUnlessGiven.count(dest) && !given.count(flag.name)))
            continue;
        if (const auto it = from_checkpoint.find(flag.name); it != from_checkpoint.end())
            out[flag.name] = it->second;
        else if ((flag.is_switch || inverted) && find_arg(saved, dest))
            out.erase(flag.name);  // the checkpoint's False (or, inverted, True)
    }
    // Without experts Megatron clears their FFN size whatever was given.
    if (!int_arg(saved, "num_experts")) out.erase("moe-ffn-hidden-size");
    return out;
}

}  // namespace mt
