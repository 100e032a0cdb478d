// DeepSpeed's ZeRO stage 1 and 2 optimizer state: each data-parallel rank of a model-parallel
// rank MM saves its partition of every param group's flat buffers in
// [bf16_]zero_pp_rank_D_mp_rank_MM_optim_states.pt (the Adam moments in base_optimizer_state,
// the fp32 weights in single_partition_of_fp32_groups); the group's parameters are laid out in
// it one after another, in the order of mp_rank_MM_model_states.pt's param_shapes.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// The shards of model-parallel rank `mp_rank` in `tag` joined over the data-parallel ranks, as
// the torch optimizer state_dict of a Megatron checkpoint whose model holds `order` (flat
// parameter names, in its order): {"state", "param_groups"}, wrapped as {"optimizer": ...,
// "fp32_from_fp16_params": ...} with `master_weights` (a bf16 or fp16 model). `model_name` maps a
// DeepSpeed parameter name of param_shapes to the model's, or to "" for one the model does not
// hold (a stage's copy of another's). None when `tag` holds no shards of that rank. mt::Error
// naming the file for shards that do not fit together.
std::optional<io::PyValue> zero_optimizer_state(
    const std::filesystem::path& tag, int mp_rank, const io::PyValue& param_shapes,
    const std::function<std::string(const std::string&)>& model_name,
    const std::vector<std::string>& order, bool master_weights);

}  // namespace mt::plugins::torch_ckpt
