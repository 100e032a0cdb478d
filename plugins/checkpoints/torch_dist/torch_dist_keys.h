// Megatron-core core names <-> torch_dist sharded keys. torch_dist stacks the homogeneous
// transformer layers: "decoder.layers.3.mlp.linear_fc1.weight" is layer 3 of the key
// "decoder.layers.mlp.linear_fc1.weight", whose global shape has a leading layer axis; the local
// spec's separate norms take the Transformer Engine names (input_layernorm ->
// self_attention.linear_qkv.layer_norm_*), and each layer's linear modules carry an
// `_extra_state` object.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/checkpoint.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_dist {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// Core-named pieces of tensors with their places in the whole ones; a name may come more than
// once (a piece of several boxes, mt/checkpoint/reshard.h shard_boxes).
using ShardedTensors = std::vector<std::pair<std::string, ShardedTensor>>;

// A tensor as torch_dist stores it: key, global shape and the chunks (offset, data) one rank
// writes (per layer for stacked keys, and per box of its piece).
struct StoredTensor {
    std::string key;
    Shape global_shape;
    std::vector<std::pair<Shape, Tensor>> chunks;
    Shape flattened_from;  // stored flattened: the original global shape (DcpEntry's)
};

// The torch_dist key of a core name and, for a stacked layer, its layer: "decoder.layers.3.
// input_layernorm.weight" -> ("decoder.layers.self_attention.linear_qkv.layer_norm_weight", 3).
std::pair<std::string, std::optional<int64_t>> sharded_key(const std::string& name);

// The core-named tensors of a whole stored tensor: a stacked key splits into one view per layer.
// MoE expert stacks (an extra expert axis) are an mt::Error ("not supported yet").
NamedTensors unstack(const std::string& key, const Tensor& full);

// The stored tensors of core-named pieces, each key prefixed by `prefix` (""; or
// "optimizer.state.exp_avg." for the optimizer's moments, which Megatron shards like their
// parameters). The layers held (a pipeline stage's run of them, numbered as in the whole model)
// must have the same tensors each (mt::Error naming the first gap otherwise); the stacked axis
// holds the model's `num_layers` (default: up to the last layer held).
std::vector<StoredTensor> stack(const ShardedTensors& tensors, std::optional<int64_t> num_layers,
                                const std::string& prefix = "");

// The `_extra_state` object keys Megatron-core asks for when loading into a model with these
// tensors: "<block>.layers.<module>._extra_state/shard_<i>_<L>" for each layer's linear modules
// and attention core (Transformer Engine modules keep FP8 metadata there; ours is None), and
// BertModel's "output_layer._extra_state/shard_0_1" (GPTModel drops its output layer's), for all
// `num_layers` of the model (default: up to the last layer held).
std::vector<std::string> extra_state_keys(const ShardedTensors& tensors,
                                          std::optional<int64_t> num_layers);

}  // namespace mt::plugins::torch_dist
