// CheckpointState <-> the dict in one rank's model_optim_rng.pt, as Megatron's
// generate_state_dict lays it out for an fp32 run: args (argparse.Namespace), checkpoint_version
// 3.0, iteration, model (flat Megatron-core state dict, or a legacy model's nested one when the
// args say use_legacy_models: torch_names.h), optimizer (torch AdamW/SGD state_dict over
// Megatron's wd_mult param groups), opt_param_scheduler, rerun_state_machine, rng_state and
// num_floating_point_operations_so_far.
#pragma once

#include <string>

#include "mt/checkpoint.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// Megatron cannot store the Philox dropout stream of megatron-train; it rides in rng_state[0]
// under this key beside (not instead of) Megatron's own generator states
// (megatron_rng_state.h).
inline constexpr const char* kDropoutRngKey = "megatron_cpp_dropout_rng_state";

// `rng_rank`, when given, places the file's Megatron RNG states (else the state's rng's own).
io::PyValue to_py(const CheckpointState& state, const MegatronRngRank* rng_rank = nullptr);

// Megatron's optimizers of a checkpoint: one, or its ChainedOptimizer's parts, each with the
// members (indices into optimizer.params) it holds, in order: with expert parallelism
// (parameters expert_parallel) the dense parameters' and the experts'; with Muon (type "muon")
// Muon's parts, then Adam's (type "adam").
struct OptimizerChain {
    OptimizerCheckpoint optimizer;
    std::vector<size_t> members;
};
std::vector<OptimizerChain> optimizer_chains(const OptimizerCheckpoint& optimizer);

// Megatron's param groups (as optimizer_to_py lays them out) without their parameter ids, as
// torch_dist's common state and DistributedOptimizer.state_dict keep them.
io::PyValue param_groups_without_ids(const OptimizerCheckpoint& optimizer);

// The fp16 loss scaler as Megatron's grad_scaler state dict ({'scale': tensor([s]),
// 'growth_tracker', 'hysteresis_tracker'}; {} for a constant scaler), and back (`file` names
// the checkpoint in errors).
io::PyValue grad_scaler_to_py(const GradScalerCheckpoint& scaler);
GradScalerCheckpoint grad_scaler_from_py(const io::PyValue& state, const std::string& file);

// DistributedOptimizer.state_dict(): {'optimizer': {'param_groups': [...]}}, the groups without
// parameter ids, each with the step (the moments live elsewhere: distrib_optim.pt, or
// torch_dist's sharded keys).
io::PyValue distributed_optimizer_to_py(const OptimizerCheckpoint& optimizer);

// The entry of a Python dict under the int key `key` (a torch state's parameter ids, a chained
// optimizer's parts), or null.
const io::PyValue* find_int_key(const io::PyValue& dict, int64_t key);

// Reads a file written by us or by Megatron (`file` names it in errors). Parameters are paired
// with optimizer state by Megatron's numbering: model keys in order, split into the wd_mult 1
// and 0 groups by Megatron's default rule (".bias" or 1-D: no weight decay); a chained
// optimizer (a list: the dense parameters', then the experts') numbers each part's own. A legacy
// model's file (nested language_model) has use_legacy_models set in its args, which releases from
// before the flag lack; QKV rows of files older than checkpoint_version 2.0 (or without one)
// are reordered as Megatron does (torch_names.h fix_qkv_ordering).
CheckpointState from_py(const io::PyValue& root, const std::string& file);
// Its args Namespace alone (`root` may come from io::load_torch_structure).
CheckpointArgs args_from_py(const io::PyValue& root, const std::string& file);

}  // namespace mt::plugins::torch_ckpt
