// Megatron's `torch` checkpoints of expert-parallel runs: each expert-parallel rank has its own
// file (mp_rank_TT[_PPP]_EEE) holding the dense tensors and its own experts, numbered from 0
// there (SequentialMLP "...mlp.experts.local_experts.<j>...", TEGroupedMLP
// "...mlp.experts.linear_fc1.weight<j>"): rank e's j-th is the model's expert e·E/ep + j.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/checkpoint.h"

namespace mt::plugins::torch_ckpt {

// Expert-parallel rank `ep_rank` of `ep`'s file of a rank's whole-model state: its dense tensors
// and its experts, renumbered, with their optimizer states (Megatron's chained optimizer: the
// experts' parameters are expert_parallel).
CheckpointState expert_rank_state(const CheckpointState& state, int64_t ep, int64_t ep_rank);
// The same for a streamed state: the placeholders kept, each made by the whole state's make.
StreamedState expert_rank_state(const StreamedState& state, int64_t ep, int64_t ep_rank);

// The inverse: every expert-parallel rank's file joined, experts (and their optimizer states)
// renumbered over the model.
CheckpointState join_expert_ranks(std::vector<CheckpointState> ranks);

// The number of experts the args give (num_experts); mt::Error naming `file` without it.
int64_t num_experts(const CheckpointArgs& args, const std::string& file);

}  // namespace mt::plugins::torch_ckpt
