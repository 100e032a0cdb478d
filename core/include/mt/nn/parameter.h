// Parameter: one trainable tensor of a module with its gradient, Megatron-core name, tensor-
// parallel shard spec and weight-decay flag; checkpoints, TP and the optimizer read this.
#pragma once

#include <string>
#include <vector>

#include "mt/model.h"
#include "mt/tensor.h"

namespace mt::nn {

struct Parameter {
    std::string
        name;      // Megatron-core key, e.g. "decoder.layers.0.self_attention.linear_qkv.weight"
    Tensor value;  // the weight, shaped as Megatron stores it
    Tensor grad;   // same shape and dtype; backward accumulates (+=), the caller zeroes it
    ShardSpec shard;
    bool weight_decay = true;  // Megatron decays weights, not biases or norm parameters
};

// A parameter of `shape` and `dtype` with zero value and zero grad (the caller initialises).
MT_API Parameter make_parameter(std::string name, const Shape& shape, DType dtype, ShardSpec shard,
                                bool weight_decay);

// "prefix.name", or name when prefix is empty (modules compose Megatron keys this way).
MT_API std::string join_name(const std::string& prefix, const std::string& name);

}  // namespace mt::nn
