// The distributed optimizer's state in torch_dist as megatron-core's default
// (fully_sharded_model_space, megatron/core/optimizer/distrib_optimizer.py
// sharded_param_state_fs_model_space) keeps it: each rank writes the ranges of the parameters it
// updates, flattened, under "optimizer.state.<fp32_param|exp_avg|exp_avg_sq>.<sharded key>".
// Such a tensor is stored reformulated (dist_checkpointing/strategies/resharding.py): a tensor
// of global shape [X, Y] whose pieces are [x, y] becomes [X/x, Y/y, x*y], each piece a row of
// it and each rank's range a chunk of that row; mcore_data keeps [X, Y]. Stacked layers (and
// experts) add their leading axes to both.
#pragma once

#include <string>
#include <vector>

#include "mt/checkpoint.h"
#include "torch_dist_keys.h"

namespace mt::plugins::torch_dist {

inline constexpr const char* kFullyShardedModelSpace = "fully_sharded_model_space";
// core_v0.19's name for Muon's layer-wise distributed optimizer's state (whole tensors per
// parameter, as a plain optimizer's).
inline constexpr const char* kDpReshardable = "dp_reshardable";
// core_v0.19's layout of the distributed optimizer's state per parameter in model shape
// (--dist-ckpt-optim-fully-reshardable; torch_dist_optimizer.h).
inline constexpr const char* kFullyReshardable = "fully_reshardable";

// The stored tensors of this rank's shards, keyed by `layout` (which must know num_layers),
// `chain` ("" or a chained optimizer's "chained_<i>.") in front.
std::vector<StoredTensor> flattened_optimizer_shards(const std::vector<OptimizerShard>& shards,
                                                     const KeyLayout& layout,
                                                     const std::string& chain = "");

// The tensor of shape `original` that a reformulated one (read whole) holds; `key` names it in
// errors.
Tensor unflatten(const Tensor& reformulated, const Shape& original, const std::string& key);

}  // namespace mt::plugins::torch_dist
