// The weights of a Hugging Face model folder: model.safetensors, or above a size
// model-0000i-of-0000n.safetensors shards listed by model.safetensors.index.json, split as
// transformers' save_pretrained(max_shard_size=...) splits them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "safetensors.h"

namespace mt::plugins::hf {

// transformers' default max_shard_size, "5GB" (decimal gigabytes).
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

// The tensors of each shard: in order, a new shard when the next tensor would take the current
// one past `max_shard_bytes` of tensor data; a tensor larger than that alone in its own.
std::vector<std::vector<TensorToWrite>> plan_shards(const std::vector<TensorToWrite>& tensors,
                                                    uint64_t max_shard_bytes);

// Writes the plan's files into `dir` (one shard: model.safetensors without an index), each
// tensor made as it is written, and returns their names.
std::vector<std::string> write_hf_weights(const std::filesystem::path& dir,
                                          const std::vector<TensorToWrite>& tensors,
                                          uint64_t max_shard_bytes);

}  // namespace mt::plugins::hf
