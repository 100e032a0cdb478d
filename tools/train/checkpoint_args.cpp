#include "checkpoint_args.h"

#include <algorithm>
#include <map>

#include "mt/train/checkpointing.h"

namespace mt::train_tool {

namespace {

// A flag's text as the Python value argparse would have produced.
ArgValue typed(const std::string& text) {
    if (text.empty()) return std::monostate{};
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

std::string python_name(std::string flag) {
    std::replace(flag.begin(), flag.end(), '-', '_');
    return flag;
}

// Sets `name` (replacing an earlier value, keeping its position).
void put(std::vector<std::pair<std::string, ArgValue>>& args, const std::string& name,
         ArgValue value) {
    for (auto& [k, v] : args)
        if (k == name) {
            v = std::move(value);
            return;
        }
    args.emplace_back(name, std::move(value));
}

template <class T>
ArgValue optional_arg(const std::optional<T>& v) {
    if (v) return *v;
    return std::monostate{};
}

}  // namespace

std::vector<std::pair<std::string, ArgValue>> checkpoint_args(
    const TrainingFlags& f, const cli::TokenizerFlags& tokenizer,
    const std::vector<FlagInfo>& model_flags, const ModelArgs& model_args) {
    std::vector<std::pair<std::string, ArgValue>> a;
    for (const auto& flag : model_flags) {
        auto it = model_args.find(flag.name);
        if (flag.name == "disable-bias-linear") {  // argparse dest add_bias_linear, store_false
            put(a, "add_bias_linear", it == model_args.end());
            continue;
        }
        if (flag.is_switch) {
            put(a, python_name(flag.name), it != model_args.end());
            continue;
        }
        const ArgValue fallback = flag.default_value ? typed(*flag.default_value) : ArgValue{};
        ArgValue value = it != model_args.end() ? typed(it->second) : fallback;
        // A float flag given as "0" is still a float to argparse.
        if (std::holds_alternative<double>(fallback) && std::holds_alternative<int64_t>(value))
            value = double(std::get<int64_t>(value));
        put(a, python_name(flag.name), value);
    }
    // Derived in arguments.py; check_checkpoint_args compares it (default True when absent).
    bool learned_positions = true;
    for (const auto& [k, v] : a)
        if (k == "position_embedding_type" && std::holds_alternative<std::string>(v))
            learned_positions = std::get<std::string>(v) == "learned_absolute";
    put(a, "add_position_embedding", learned_positions);
    // Megatron's derived sizes (ffn_hidden_size, kv_channels, ... came with the flags above).
    if (auto it = model_args.find("padded-vocab-size"); it != model_args.end())
        put(a, "padded_vocab_size", typed(it->second));
    const auto& s = f.schedule;
    put(a, "micro_batch_size", f.micro_batch_size);
    put(a, "global_batch_size", s.global_batch_size);
    put(a, "train_iters", optional_arg(s.train_iters));
    put(a, "train_samples", optional_arg(s.train_samples));
    put(a, "lr", s.lr);
    put(a, "min_lr", s.min_lr);
    put(a, "lr_decay_style", s.lr_decay_style);
    put(a, "lr_decay_iters", optional_arg(s.lr_decay_iters));
    put(a, "lr_decay_samples", optional_arg(s.lr_decay_samples));
    put(a, "lr_warmup_fraction", optional_arg(s.lr_warmup_fraction));
    put(a, "lr_warmup_iters", s.lr_warmup_iters);
    put(a, "lr_warmup_samples", s.lr_warmup_samples);
    put(a, "lr_warmup_init", s.lr_warmup_init);
    put(a, "weight_decay", f.weight_decay);
    put(a, "start_weight_decay", s.start_weight_decay);
    put(a, "end_weight_decay", s.end_weight_decay);
    put(a, "weight_decay_incr_style", s.weight_decay_incr_style);
    put(a, "optimizer", f.optimizer);
    put(a, "adam_beta1", f.optimizer_config.adam_beta1);
    put(a, "adam_beta2", f.optimizer_config.adam_beta2);
    put(a, "adam_eps", f.optimizer_config.adam_eps);
    put(a, "sgd_momentum", f.optimizer_config.sgd_momentum);
    put(a, "clip_grad", f.clip_grad);
    put(a, "seed", f.seed);
    put(a, "tokenizer_type", tokenizer.type);
    put(a, "tensor_model_parallel_size", int64_t(1));
    put(a, "pipeline_model_parallel_size", int64_t(1));
    put(a, "data_parallel_size", int64_t(1));
    put(a, "world_size", int64_t(1));
    put(a, "fp16", false);
    put(a, "bf16", false);
    put(a, "params_dtype", std::string("float32"));
    put(a, "ckpt_format", f.ckpt_format);
    put(a, "save", optional_arg(f.save));
    put(a, "load", optional_arg(f.load));
    put(a, "save_interval", optional_arg(f.save_interval));
    put(a, "no_save_optim", f.no_save_optim);
    put(a, "no_save_rng", f.no_save_rng);
    put(a, "no_load_optim", f.no_load_optim);
    put(a, "no_load_rng", f.no_load_rng);
    put(a, "finetune", f.finetune);
    put(a, "log_interval", f.log_interval);
    put(a, "eval_interval", f.eval_interval);
    put(a, "eval_iters", f.eval_iters);
    return a;
}

}  // namespace mt::train_tool
