// Megatron-DeepSpeed's MoE layers in DeepSpeed's checkpoints: the engine saves each expert apart,
// layer_M_expert_E_mp_rank_TT_model_states.pt (M counting the MoE layers, E the expert over the
// whole model; a flat state dict of full names), dropping them from mp_rank_TT_model_states.pt,
// and the optimizer of each expert-parallel rank R in expp_rank_R_mp_rank_TT_optim_states.pt
// (the dense parameters and R's experts; DeepSpeed's "moe" param groups hold the experts).
#pragma once

#include <filesystem>

#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// Puts model-parallel rank `mp_rank`'s expert files of `tag` into `module` (the engine's module
// state dict, nested as Megatron-DeepSpeed's: language_model.encoder), each layer's experts right
// after its gate as DeepSpeed's MoE module registers them. False when there are none.
bool add_deepspeed_experts(const std::filesystem::path& tag, int mp_rank, io::PyValue& module);

// Whether `tag` holds expert files of model-parallel rank `mp_rank`.
bool has_deepspeed_experts(const std::filesystem::path& tag, int mp_rank);

// The torch optimizer state dict of rank `mp_rank`'s expp_rank files joined over the
// expert-parallel ranks (each one's experts appended to the "moe" groups in rank order, ids
// renumbered); none (a PyValue None) without such files or where they hold None (ZeRO, whose
// shards hold the state).
io::PyValue deepspeed_expert_optimizer(const std::filesystem::path& tag, int mp_rank);

}  // namespace mt::plugins::torch_ckpt
