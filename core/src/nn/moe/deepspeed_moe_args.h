// Megatron-DeepSpeed's reading of --num-experts: DeepSpeed's MoE layers (args.cpp calls it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/model_args_reader.h"

namespace mt::nn {

struct TransformerArgs;

// --num-experts (one value or one per MoE layer) with --expert-interval and the other
// deepspeed_moe_flags() into config.moe / config.moe_layers; a model whose layers all have one
// expert stays dense. mt::Error names the flag for anything refused.
void read_deepspeed_moe_args(const ModelArgsReader& f, TransformerArgs& config);

// --num-experts's counts: Megatron-DeepSpeed's nargs='+' list, its values joined by commas (as
// the tools pass it) or a checkpoint's Python list ("[4, 8]").
std::vector<int64_t> deepspeed_expert_counts(const std::string& text);

}  // namespace mt::nn
