// Megatron's non-distributed optimizer state in torch_dist (FP32Optimizer, or a ChainedOptimizer
// of one; megatron/core/optimizer/optimizer.py sharded_state_dict): each moment is a sharded
// tensor "optimizer.state.<exp_avg|exp_avg_sq|momentum_buffer>.<model key>" sharded like its
// parameter, and common.pt holds 'optimizer': {'state': {'common_step': step},
// 'param_groups': torch's groups without their 'params'}.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/checkpoint.h"
#include "mt/io/py_value.h"
#include "torch_dist_keys.h"

namespace mt::plugins::torch_dist {

inline constexpr const char* kMomentPrefix = "optimizer.state.";
// The f32 master weights of fp16 / bf16 training: "optimizer.state.fp32_param.<model key>",
// sharded like the parameter (Float16OptimizerWithFloat16Params), beside the moments; common.pt
// then wraps the torch state: 'optimizer': {'optimizer': {'state', 'param_groups'}}.
inline constexpr const char* kMasterName = "fp32_param";
// The distributed optimizer's f32 values in core_v0.19's fully_reshardable layout: the masters,
// or an f32 run's weights ("optimizer.state.param.<model key>", sharded like the parameter).
inline constexpr const char* kFullyReshardableParamName = "param";

// The common part: Megatron's param groups (the `torch` format's, see torch_state.h) and the
// shared step.
io::PyValue optimizer_common_to_py(const OptimizerCheckpoint& optimizer);

// The moments as stored tensors, stacked and cut like the model's: optimizer.params[i] holds
// the moments of model[i] (a whole tensor, or one box of a piece), keyed by `layout` as stack,
// `chain` ("" or a chained optimizer's "chained_<i>.") in front; `whole` the whole model's
// tensors when `model` is a chained part's (stack's names). With optimizer.fully_reshardable
// the f32 values come first as kFullyReshardableParamName (`model`'s own in an f32 run).
std::vector<StoredTensor> optimizer_moments(const OptimizerCheckpoint& optimizer,
                                            const ShardedTensors& model, const KeyLayout& layout,
                                            const std::string& chain = "",
                                            const ShardedTensors* whole = nullptr);

// Megatron's ChainedOptimizer.sharded_state_dict puts "chained_<i>." in front of each of its
// optimizers' keys (expert parallelism: the dense parameters' 0, the experts' 1): `key` without
// it (an unchained key as it is).
std::string unchained(const std::string& key);

// The optimizer of a checkpoint from its common 'optimizer' entry and its moments, keyed
// "<moment>.<core name>" (exp_avg.decoder.layers.0....); a chained optimizer's common entry is a
// dict {0: dense, 1: experts}, whose moments come unchained. Parameters are `model`'s, in its
// order;
// their weight-decay group follows Megatron's default rule (".bias" or 1-D: none). Layouts this
// does not read (several chained optimizers)
// are mt::Errors saying "not supported yet: ..." (the loader keeps the message in
// CheckpointState::optimizer_not_loaded); `where` names the checkpoint.
OptimizerCheckpoint optimizer_from_py(
    const io::PyValue& common, const NamedTensors& moments,
    const std::vector<std::pair<std::string, ShardedTensor>>& model, int64_t iteration,
    const std::string& where);

}  // namespace mt::plugins::torch_dist
