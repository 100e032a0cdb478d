// The parameters of Megatron-core's GPTModel (local or Transformer Engine spec, as
// --transformer-impl says): Megatron-core names in state-dict order, full (unsharded) shapes,
// tensor-parallel shard specs and weight-decay flags. Checkpoints, the converter and tensor
// parallelism all read this one list.
#pragma once

#include <vector>

#include "gpt_config.h"
#include "mt/model.h"

namespace mt::plugins::gpt {

std::vector<ParameterInfo> gpt_parameters(const GptConfig& config);

}  // namespace mt::plugins::gpt
