// CheckpointFormat interface (torch, torch_dist, hf plugins): saves and loads the model state
// (canonical name -> tensor with its global shape and this rank's slice), optimizer and
// scheduler state, RNG state, iteration and args, exactly as Megatron-LM lays them out.
// Declared now; the checkpoint issue implements the formats.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt {

struct ShardedTensor {
    Tensor local;         // this rank's piece
    Shape global_shape;   // the full tensor's shape
    Shape global_offset;  // where `local` starts in it
};

struct CheckpointState {
    int64_t iteration = 0;
    std::map<std::string, ShardedTensor> model;      // canonical (Megatron-core) names
    std::map<std::string, ShardedTensor> optimizer;  // e.g. "<param>.exp_avg"
    std::map<std::string, std::string> args;         // training arguments as text
};

class MT_API CheckpointFormat {
  public:
    virtual ~CheckpointFormat() = default;
    virtual std::string_view name() const = 0;  // "torch", "torch_dist", "hf"
    // True when `dir` holds a checkpoint this format can read.
    virtual bool detect(const std::filesystem::path& dir) const = 0;
    virtual void save(const std::filesystem::path& dir, const CheckpointState& state) = 0;
    virtual CheckpointState load(const std::filesystem::path& dir) = 0;
};

}  // namespace mt
