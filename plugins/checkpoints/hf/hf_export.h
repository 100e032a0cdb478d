// Megatron-core tensors -> Hugging Face tensors: the inverse of what HfCheckpoint::load reads
// (QKV rows split per query group into q/k/v, fc1's [gate; up] halves, GPT-2's Conv1D
// transposes, the vocabulary table cut to the true vocabulary), in the weights' own dtype.
#pragma once

#include <functional>
#include <vector>

#include "hf_config.h"
#include "mt/checkpoint.h"
#include "safetensors.h"

namespace mt::plugins::hf {

// The model tensors of `state` (whole tensors, either --transformer-impl's norm names) under
// Hugging Face names, in the model's order, for `config` (config.vocab_size rows of the
// vocabulary tables are kept; a tied model has no lm_head.weight, as transformers saves it),
// each made when it is written from the values make(i) gives of state.model[i] (a streamed
// save's placeholders: nothing is read here). Every tensor has `dtype`: one of another dtype is
// cast. mt::Error naming the tensor, now, for a missing one, a piece of a tensor, or a shape
// the config does not imply.
std::vector<TensorToWrite> hf_tensors(const CheckpointState& state,
                                      std::function<Tensor(size_t)> make, const HfConfig& config,
                                      DType dtype);

}  // namespace mt::plugins::hf
