// The `torch_dist` CheckpointFormat: Megatron-core's dist_checkpointing directories
// (iter_NNNNNNN/ with metadata.json, common.pt, .metadata and __R_I.distcp). Loads every model
// tensor whole, whatever tensor/pipeline layout saved it; saves as one rank.
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::torch_dist {

class TorchDistCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "torch_dist"; }
    bool detect(const std::filesystem::path& dir) const override;
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    CheckpointState load(const std::filesystem::path& dir) override;
};

}  // namespace mt::plugins::torch_dist
