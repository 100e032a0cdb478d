// The args Namespace megatron-train stores in a checkpoint: Megatron's names for the training
// and model flags, including the model sizes Megatron derives (ffn_hidden_size, kv_channels,
// padded_vocab_size), which the model family resolves (ModelFamily::resolved_args).
#pragma once

#include <string>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/cli/flags.h"
#include "mt/model.h"
#include "mt/train/training_flags.h"

namespace mt::train {

// `run`: the run's groups (world and data-parallel sizes).
MT_API CheckpointArgs checkpoint_args(const TrainingFlags& flags,
                                      const cli::TokenizerFlags& tokenizer,
                                      const std::vector<FlagInfo>& model_flags,
                                      const ModelArgs& resolved_model_args,
                                      const parallel::ParallelState& run);

}  // namespace mt::train
