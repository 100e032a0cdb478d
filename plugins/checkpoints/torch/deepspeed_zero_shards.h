// DeepSpeed's ZeRO stage 1 and 2 optimizer state: each data-parallel rank of a model-parallel
// rank MM saves its partition of every param group's flat buffers in
// [bf16_]zero_pp_rank_D_mp_rank_MM_optim_states.pt (the Adam moments in base_optimizer_state,
// the fp32 weights in single_partition_of_fp32_groups); the group's parameters are laid out in
// it one after another, in the order of mp_rank_MM_model_states.pt's param_shapes. With
// Megatron-DeepSpeed's MoE layers (whose engine saves no param_shapes) each shard's
// param_slice_mappings name the parameters instead, and the "moe" groups are partitioned over the
// expert-data-parallel ranks only: each expert-parallel rank's groups hold its own experts.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deepspeed_optimizer_state.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// The shards of model-parallel rank `mp_rank` in `tag` joined over the data-parallel ranks and
// cut into parameters by `param_shapes` (mp_rank_MM_model_states.pt's: per group, DeepSpeed's
// parameter names and shapes), or where that is None by the shards' param_slice_mappings, the
// shapes then given by `model_shape` (of a DeepSpeed name, experts numbered over the whole model
// as the expert files number them; none for a name the model lacks). None when `tag` holds no
// shards of that rank. mt::Error naming the file for shards that do not fit together.
std::optional<std::vector<DeepSpeedParamGroup>> zero_param_groups(
    const std::filesystem::path& tag, int mp_rank, const io::PyValue& param_shapes,
    const std::function<std::optional<Shape>(const std::string&)>& model_shape);

}  // namespace mt::plugins::torch_ckpt
