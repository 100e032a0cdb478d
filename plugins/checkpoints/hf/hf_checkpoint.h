// The `hf` CheckpointFormat: reads a Hugging Face GPT-2, Llama or Mistral folder (config.json +
// model.safetensors, or shards listed by model.safetensors.index.json) into Megatron-core tensors
// (Transformer Engine names, Megatron layouts: QKV grouped per query group, [gate; up] fc1).
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::hf {

class HfCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "hf"; }
    bool detect(const std::filesystem::path& dir) const override;
    // Not supported yet: throws mt::Error.
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    // The model tensors in float32 (F16/BF16 converted), iteration 0, no optimizer, schedule or
    // RNG; args holds Megatron's names of the model's sizes. Build the model with
    // hf_model_args(read_hf_config(dir)).
    CheckpointState load(const std::filesystem::path& dir) override;
};

}  // namespace mt::plugins::hf
