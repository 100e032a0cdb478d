// Megatron's MoE flags (--num-experts, --moe-*) as the GPT family reads them into its config.
#pragma once

#include <vector>

#include "mt/model.h"
#include "mt/model_args_reader.h"
#include "mt/nn/moe_config.h"

namespace mt::plugins::gpt {

struct GptConfig;

// The flags, with Megatron's help texts and defaults.
std::vector<FlagInfo> moe_flags();

// Reads the flags into config.moe and config.moe_layers (nothing without --num-experts),
// with Megatron's defaults and checks; mt::Error names the flag for anything refused.
void read_moe_args(const ModelArgsReader& f, GptConfig& config);

}  // namespace mt::plugins::gpt
