// Megatron's MoE flags (--num-experts, --moe-*) as read into the transformer flags' config.
#pragma once

#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/model_args_reader.h"
#include "mt/nn/moe/config.h"

namespace mt::nn {

struct TransformerArgs;

// The flags, with Megatron's help texts and defaults.
MT_API std::vector<FlagInfo> moe_flags();

// Megatron-DeepSpeed's MoE flags (--expert-interval, --topk, --mlp-type, --moe-*-capacity-factor,
// ...), with its defaults: with --expert-interval (which megatron-train's --deepspeed supplies)
// --num-experts means DeepSpeed's MoE layers (GShardGating), a list of them one per MoE layer.
MT_API std::vector<FlagInfo> deepspeed_moe_flags();

// Reads the flags into config.moe and config.moe_layers (nothing without --num-experts),
// with Megatron's defaults and checks; mt::Error names the flag for anything refused.
MT_API void read_moe_args(const ModelArgsReader& f, TransformerArgs& config);

}  // namespace mt::nn
