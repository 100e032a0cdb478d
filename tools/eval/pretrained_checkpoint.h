// Megatron's start of a finetuning run from --pretrained-checkpoint (tasks/finetune_utils.py):
// the pretrained model's weights, loaded once at iteration 0 without optimizer or RNG state,
// into a task model that has a head of its own; Megatron's Classification / MultipleChoice
// load_state_dict loads the language model strictly and the head when the checkpoint has one.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "mt/model.h"
#include "mt/optim/optimizer.h"
#include "mt/parallel/parallel_state.h"

namespace mt::eval {

// Copies every parameter of `model` from the latest checkpoint in `dir` (any format, any tensor
// layout) and then, with an `optimizer`, its master copies from them; returns the checkpoint's
// iteration. Parameters named `head_prefix`... that the checkpoint lacks keep their
// initialisation, with Megatron's warning "***WARNING*** could not find <head_prefix> in the
// checkpoint, initializing to random"; any other missing parameter is an mt::Error naming it.
// The checkpoint's tensors the model lacks (a pretraining model's LM and binary heads) are
// ignored. Megatron's loading lines go to `print`; `run`: the run's groups (the tensor rank the
// lines name).
int64_t load_task_model(const std::filesystem::path& dir, Model& model, optim::Optimizer* optimizer,
                        const std::string& head_prefix, const parallel::ParallelState& run,
                        const std::function<void(const std::string&)>& print);

}  // namespace mt::eval
