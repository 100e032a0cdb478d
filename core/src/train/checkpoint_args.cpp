#include "mt/train/checkpoint_args.h"

#include <filesystem>
#include <sstream>

#include "mt/parallel/parallel_state.h"

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/train/checkpointing.h"

namespace mt::train {

namespace {

// A flag's text as the Python value argparse would have produced.
ArgValue typed(const std::string& text) {
    if (text.empty()) return std::monostate{};
    // "[1, 0]": a list of ints (--moe-layer-freq's pattern, as the family writes it).
    if (text.front() == '[' && text.back() == ']') {
        std::vector<int64_t> ints;
        std::string item;
        std::istringstream items(text.substr(1, text.size() - 2));
        while (std::getline(items, item, ',')) {
            size_t used = 0;
            try {
                ints.push_back(std::stoll(item, &used));
            } catch (const std::exception&) {
                return text;
            }
            if (item.find_first_not_of(' ', used) != std::string::npos) return text;
        }
        return ints;
    }
    size_t used = 0;
    try {
        long long i = std::stoll(text, &used);
        if (used == text.size()) return int64_t(i);
    } catch (const std::exception&) {
    }
    try {
        double d = std::stod(text, &used);
        if (used == text.size()) return d;
    } catch (const std::exception&) {
    }
    return text;
}

template <class T>
ArgValue optional_arg(const std::optional<T>& v) {
    if (v) return *v;
    return std::monostate{};
}

}  // namespace

CheckpointArgs checkpoint_args(const TrainingFlags& f, const cli::TokenizerFlags& tokenizer,
                               const std::vector<FlagInfo>& model_flags,
                               const ModelArgs& model_args, const parallel::ParallelState& run) {
    CheckpointArgs a;
    for (const auto& flag : model_flags) {
        auto it = model_args.find(flag.name);
        if (!flag.store_false_dest.empty()) {
            set_arg(a, flag.store_false_dest, it == model_args.end());
            continue;
        }
        if (flag.is_switch) {
            const std::string name = flag_arg_name(flag);
            // A switch sharing its dest with a store_false flag (--bert-binary-head and
            // --bert-no-binary-head: bert_binary_head) leaves it alone unless given.
            if (it == model_args.end() && find_arg(a, name)) continue;
            set_arg(a, name, it != model_args.end());
            continue;
        }
        // argparse's nargs='*' keeps a list of str (--spec's module and name, --recompute-modules).
        if (flag.multiple && it != model_args.end()) {
            std::vector<std::string> items;
            std::istringstream words(it->second);
            for (std::string w; words >> w;) items.push_back(w);
            set_arg(a, flag_arg_name(flag), items);
            continue;
        }
        const ArgValue fallback = flag.default_value ? typed(*flag.default_value) : ArgValue{};
        ArgValue value = it != model_args.end() ? typed(it->second) : fallback;
        // A float flag given as "0" is still a float to argparse.
        if (std::holds_alternative<double>(fallback) && std::holds_alternative<int64_t>(value))
            value = double(std::get<int64_t>(value));
        set_arg(a, flag_arg_name(flag), value);
    }
    // As argparse leaves it (not derived from the position type): Megatron's
    // check_checkpoint_args compares it with the resuming run's.
    set_arg(a, "add_position_embedding", f.add_position_embedding);
    // The rest of what Megatron's load_args_from_checkpoint reads under --use-checkpoint-args
    // (core_v0.13 and core_v0.19), for the model features megatron.cpp trains without: off.
    // Where the family stated one, its value stays.
    const std::pair<const char*, ArgValue> kLoadArgsFields[] = {
        {"use_rotary_position_embeddings", false},
        {"apply_query_key_layer_scaling", false},
        {"spec", ArgValue{}},
        {"is_hybrid_model", false},
        {"hybrid_override_pattern", ArgValue{}},
        {"hybrid_layer_pattern", ArgValue{}},
        {"hybrid_attention_ratio", 0.0},
        {"hybrid_mlp_ratio", 0.0},
        {"mamba_state_dim", ArgValue{}},
        {"mamba_head_dim", ArgValue{}},
        {"mamba_num_groups", ArgValue{}},
        {"mamba_num_heads", ArgValue{}},
        {"heterogeneous_layers_config_path", ArgValue{}},
        {"heterogeneous_layers_config_encoded_json", ArgValue{}},
        {"mtp_num_layers", ArgValue{}},
        {"mtp_use_repeated_layer", false},
        {"mtp_hybrid_override_pattern", ArgValue{}},
        {"moe_latent_size", ArgValue{}},
        {"moe_single_grouped_weight", false},
        {"moe_single_grouped_bias", false},
    };
    for (const auto& [name, value] : kLoadArgsFields)
        if (!find_arg(a, name)) set_arg(a, name, value);
    // Megatron's derived sizes (ffn_hidden_size, kv_channels, ... came with the flags above).
    if (auto it = model_args.find("padded-vocab-size"); it != model_args.end())
        set_arg(a, "padded_vocab_size", typed(it->second));
    const auto& s = f.schedule;
    set_arg(a, "micro_batch_size", f.micro_batch_size);
    set_arg(a, "global_batch_size", s.global_batch_size);
    set_arg(a, "train_iters", optional_arg(s.train_iters));
    set_arg(a, "train_samples", optional_arg(s.train_samples));
    set_arg(a, "lr", s.lr);
    set_arg(a, "min_lr", s.min_lr);
    set_arg(a, "lr_decay_style", s.lr_decay_style);
    set_arg(a, "lr_decay_iters", optional_arg(s.lr_decay_iters));
    set_arg(a, "lr_decay_samples", optional_arg(s.lr_decay_samples));
    set_arg(a, "lr_warmup_fraction", optional_arg(s.lr_warmup_fraction));
    set_arg(a, "lr_warmup_iters", s.lr_warmup_iters);
    set_arg(a, "lr_warmup_samples", s.lr_warmup_samples);
    set_arg(a, "lr_warmup_init", s.lr_warmup_init);
    set_arg(a, "weight_decay", f.weight_decay);
    set_arg(a, "start_weight_decay", s.start_weight_decay);
    set_arg(a, "end_weight_decay", s.end_weight_decay);
    set_arg(a, "weight_decay_incr_style", s.weight_decay_incr_style);
    set_arg(a, "optimizer", f.optimizer);
    set_arg(a, "adam_beta1", f.optimizer_config.adam_beta1);
    set_arg(a, "adam_beta2", f.optimizer_config.adam_beta2);
    set_arg(a, "adam_eps", f.optimizer_config.adam_eps);
    set_arg(a, "sgd_momentum", f.optimizer_config.sgd_momentum);
    set_arg(a, "clip_grad", f.clip_grad);
    set_arg(a, "seed", f.seed);
    set_arg(a, "dataloader_type", f.dataloader_type);
    set_arg(a, "data_sharding", f.data_sharding);
    set_arg(a, "tokenizer_type", tokenizer.type);
    // What build_tokenizer reads besides the files (--use-checkpoint-args rebuilds from them).
    const TokenizerOptions& o = tokenizer.options;
    set_arg(a, "vocab_size", optional_arg(o.vocab_size));
    set_arg(a, "vocab_extra_ids", o.vocab_extra_ids);
    set_arg(a, "tiktoken_pattern",
            o.tiktoken_pattern.empty() ? ArgValue{} : ArgValue{o.tiktoken_pattern});
    set_arg(a, "tiktoken_num_special_tokens",
            o.tiktoken_num_special_tokens.value_or(1000));  // argparse's default
    set_arg(a, "tiktoken_special_tokens", optional_arg(o.tiktoken_special_tokens));
    if (o.classes == TokenizerOptions::Classes::core_v0_19) {
        // core_v0.19's tokenizer fields, which tell its classes built the tokenizer.
        set_arg(a, "tokenizer_sentencepiece_legacy", o.sentencepiece_legacy);
        set_arg(a, "tokenizer_sentencepiece_ignore_extra_whitespaces",
                o.sentencepiece_ignore_extra_whitespaces);
        set_arg(a, "special_tokens", optional_arg(o.special_tokens));
        set_arg(a, "tokenizer_hf_no_include_special_tokens", !o.hf_include_special_tokens);
        set_arg(a, "trust_remote_code", o.trust_remote_code);
        set_arg(a, "null_tokenizer_eod_id", optional_arg(o.null_eod_id));
        set_arg(a, "null_tokenizer_pad_id", o.null_pad_id);
        set_arg(a, "metadata_path",
                o.metadata_path.empty()
                    ? ArgValue{}
                    : ArgValue{std::filesystem::absolute(o.metadata_path).string()});
    }
    // Megatron keeps the tokenizer's files in the args; generation and evaluation take them
    // from there when not given.
    auto path_arg = [](const std::string& p) {
        return p.empty() ? ArgValue{} : ArgValue{std::filesystem::absolute(p).string()};
    };
    set_arg(a, "vocab_file", path_arg(tokenizer.options.vocab_file));
    set_arg(a, "merge_file", path_arg(tokenizer.options.merge_file));
    set_arg(a, "tokenizer_model", path_arg(tokenizer.options.tokenizer_model));
    const auto& p = f.parallel;
    set_arg(a, "tensor_model_parallel_size", int64_t(p.tensor_parallel));
    set_arg(a, "pipeline_model_parallel_size", int64_t(p.pipeline_parallel));
    set_arg(a, "context_parallel_size", int64_t(p.context_parallel));
    // Megatron's torch files of expert ranks (mp_rank_TT_EEE) are told from stages by these.
    set_arg(a, "expert_model_parallel_size", int64_t(run.ep().size()));
    set_arg(a, "expert_tensor_parallel_size", int64_t(run.expert_tp().size()));
    // How the layers split over the stages (a pipeline-split torch checkpoint is read by them).
    set_arg(a, "decoder_first_pipeline_num_layers",
            p.first_stage_layers >= 0 ? ArgValue{p.first_stage_layers} : ArgValue{});
    set_arg(a, "decoder_last_pipeline_num_layers",
            p.last_stage_layers >= 0 ? ArgValue{p.last_stage_layers} : ArgValue{});
    set_arg(a, "account_for_embedding_in_pipeline_split", p.account_for_embedding);
    set_arg(a, "account_for_loss_in_pipeline_split", p.account_for_loss);
    const int virtual_stages = run.config().virtual_stages;
    set_arg(a, "virtual_pipeline_model_parallel_size",
            virtual_stages > 1 ? ArgValue{int64_t(virtual_stages)} : ArgValue{});
    set_arg(a, "num_layers_per_virtual_pipeline_stage",
            f.layers_per_virtual_stage > 0 ? ArgValue{f.layers_per_virtual_stage} : ArgValue{});
    set_arg(a, "data_parallel_size", int64_t(run.dp().size()));
    set_arg(a, "world_size", int64_t(run.world().size()));
    set_arg(a, "sequence_parallel", f.sequence_parallel);
    set_arg(a, "use_distributed_optimizer", f.data_parallel.distributed_optimizer);
    // (core_v0.19's validate_args turns Muon's --use-distributed-optimizer into this.)
    if (f.optimizer == "muon")
        set_arg(a, "use_layer_wise_distributed_optimizer", f.optimizer_config.muon.layer_wise);
    set_arg(a, "num_distributed_optimizer_instances",
            int64_t(f.data_parallel.distributed_optimizer_instances));
    // Megatron's names; the distributed optimizer's torch-format file is laid out by them.
    set_arg(a, "overlap_grad_reduce", f.data_parallel.overlap_grad_reduce);
    set_arg(a, "ddp_bucket_size",
            f.data_parallel.bucket_size > 0 ? ArgValue{f.data_parallel.bucket_size} : ArgValue{});
    set_arg(a, "fp16", f.params_dtype == DType::f16);
    set_arg(a, "bf16", f.params_dtype == DType::bf16);
    set_arg(a, "params_dtype",
            std::string(f.params_dtype == DType::bf16  ? "bfloat16"
                        : f.params_dtype == DType::f16 ? "float16"
                                                       : "float32"));
    const optim::GradScalerConfig& scaler = f.grad_scaler;
    set_arg(a, "loss_scale", scaler.loss_scale ? ArgValue{*scaler.loss_scale} : ArgValue{});
    set_arg(a, "initial_loss_scale", scaler.initial_scale);
    set_arg(a, "min_loss_scale", scaler.min_scale);
    set_arg(a, "loss_scale_window", double(scaler.window));  // a float in Megatron's args
    set_arg(a, "hysteresis", scaler.hysteresis);
    // Megatron turns these on for bf16 (arguments.py).
    set_arg(a, "accumulate_allreduce_grads_in_fp32",
            f.params_dtype == DType::bf16 && !f.grad_reduce_in_bf16);
    set_arg(a, "grad_reduce_in_bf16", f.grad_reduce_in_bf16);
    set_arg(a, "fp8_param_gather", f.fp8_param_gather);
    set_arg(a, "ckpt_format", f.ckpt_format);
    set_arg(a, "save", optional_arg(f.save));
    set_arg(a, "load", optional_arg(f.load));
    set_arg(a, "save_interval", optional_arg(f.save_interval));
    set_arg(a, "no_save_optim", f.no_save_optim);
    set_arg(a, "no_save_rng", f.no_save_rng);
    set_arg(a, "no_load_optim", f.no_load_optim);
    set_arg(a, "no_load_rng", f.no_load_rng);
    set_arg(a, "finetune", f.finetune);
    set_arg(a, "log_interval", f.log_interval);
    set_arg(a, "eval_interval", f.eval_interval);
    set_arg(a, "eval_iters", f.eval_iters);
    return a;
}

}  // namespace mt::train
