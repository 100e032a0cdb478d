// DeepSpeed's universal checkpoints (deepspeed.checkpoint.ds_to_universal's output, which
// Megatron-DeepSpeed resumes with --universal-checkpoint): a folder holding, per parameter of the
// whole model, zero/<name>/fp32.pt, exp_avg.pt, exp_avg_sq.pt and step.pt (tensor-parallel pieces
// joined, the vocabulary's padding cut), zero/optimizer_state.pt (the param groups' settings) and
// the run's mp_rank_MM_model_states.pt (args, schedule, and param_shapes: each model-parallel
// rank's parameter names by group).
#pragma once

#include <filesystem>
#include <vector>

#include "deepspeed_optimizer_state.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// Whether `tag` is a universal checkpoint's folder.
bool is_universal(const std::filesystem::path& tag);

// The whole model's parameters as the legacy model's nested state dict ({"language_model":
// {"embedding": ..., "encoder": ..., "output_layer": ...}}, the vocabulary padded back to
// `padded_vocab_size` rows with zeros as DeepSpeed pads it), in `dtype`, and their optimizer
// state under the legacy names. mt::Error naming the file for what does not fit.
struct UniversalState {
    io::PyValue model;
    std::vector<DeepSpeedParamGroup> groups;
};
UniversalState read_universal(const std::filesystem::path& tag, int64_t padded_vocab_size,
                              DType dtype);

}  // namespace mt::plugins::torch_ckpt
