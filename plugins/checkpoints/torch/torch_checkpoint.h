// The `torch` CheckpointFormat: Megatron's per-rank layout (torch_layout.h) holding one
// torch.save file whose dict is Megatron's generate_state_dict (torch_state.h).
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::torch_ckpt {

class TorchCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "torch"; }
    bool detect(const std::filesystem::path& dir) const override;
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    CheckpointState load(const std::filesystem::path& dir) override;
};

}  // namespace mt::plugins::torch_ckpt
