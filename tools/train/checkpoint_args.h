// The args Namespace megatron-train stores in a checkpoint: Megatron's names for the training
// and model flags, including the model sizes Megatron derives (ffn_hidden_size, kv_channels,
// padded_vocab_size), which the model family resolves (ModelFamily::resolved_args).
#pragma once

#include <string>

#include "mt/checkpoint.h"
#include "mt/cli/flags.h"
#include "mt/model.h"
#include "training_flags.h"

namespace mt::train_tool {

// `run`: the run's groups (world and data-parallel sizes).
CheckpointArgs checkpoint_args(const TrainingFlags& flags, const cli::TokenizerFlags& tokenizer,
                               const std::vector<FlagInfo>& model_flags,
                               const ModelArgs& resolved_model_args,
                               const parallel::ParallelState& run);

}  // namespace mt::train_tool
