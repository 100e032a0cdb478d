// Megatron's args as --saver hf reads them (absent entries take Megatron's defaults, errors name
// the entry as Python prints it), and what the transformer families (GPT-2, BERT, Llama) read
// from them alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hf_config.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"

namespace mt::plugins::hf {

class SaverArgs {
  public:
    explicit SaverArgs(const CheckpointArgs& args) : args_(args) {}

    int64_t integer(const char* name) const {
        const auto v = int_arg(args_, name);
        MT_CHECK(v.has_value(), "--saver hf: the checkpoint's args have no integer ", name);
        return *v;
    }
    int64_t integer(const char* name, int64_t fallback) const {
        return int_arg(args_, name).value_or(fallback);
    }
    double real(const char* name, double fallback) const {
        const ArgValue* v = find_arg(args_, name);
        if (v && std::holds_alternative<double>(*v)) return std::get<double>(*v);
        if (v && std::holds_alternative<int64_t>(*v)) return double(std::get<int64_t>(*v));
        return fallback;
    }
    // A switch: absent or None is `fallback`.
    bool flag(const char* name, bool fallback = false) const {
        const ArgValue* v = find_arg(args_, name);
        if (v && std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
        return fallback;
    }
    std::string text(const char* name, const std::string& fallback) const {
        const ArgValue* v = find_arg(args_, name);
        return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : fallback;
    }
    const ArgValue* find(const char* name) const { return find_arg(args_, name); }
    // True when the entry is set to something other than None, False or 0.
    bool set(const char* name) const {
        const ArgValue* v = find_arg(args_, name);
        if (!v || std::holds_alternative<std::monostate>(*v)) return false;
        if (std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
        if (std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v) != 0;
        return true;
    }
    const CheckpointArgs& all() const { return args_; }

  private:
    const CheckpointArgs& args_;
};

[[noreturn]] void not_supported(const std::string& field, const std::string& value,
                                const std::string& why);

// The sizes, norm epsilon, init and tying of a GPT-2, BERT or Llama checkpoint (arch and
// model_type left for the family), after refusing what none of them has (layernorm-1p, squared
// ReLU, multi-latent attention, GPT-OSS's attention sinks and clamped, offset GLUs).
HfConfig transformer_config_from_args(const SaverArgs& a);
// The sizes, norm epsilon, init and tying alone.
HfConfig transformer_sizes_from_args(const SaverArgs& a);

// GPT-2's and BERT's layers (`model` names the one for a refusal, `why` what it has):
// LayerNorm, a GeLU MLP and linear biases, multi-head attention of hidden_size / heads wide
// heads without q/k norms.
void refuse_unless_gpt2_layers(const SaverArgs& a, const HfConfig& c, const std::string& model,
                               const std::string& why);

}  // namespace mt::plugins::hf
