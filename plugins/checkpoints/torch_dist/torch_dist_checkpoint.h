// The `torch_dist` CheckpointFormat: Megatron-core's dist_checkpointing directories
// (iter_NNNNNNN/ with metadata.json, common.pt, .metadata and __R_I.distcp). Loads every model
// tensor whole, whatever tensor/pipeline layout saved it; saves from one rank (whole tensors in
// __0_0.distcp) or from every rank of a run at once, each rank writing its pieces to its own
// __R_0.distcp and rank 0 the index and the common state.
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::torch_dist {

class TorchDistCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "torch_dist"; }
    DetectionOrder detection_order() const override { return DetectionOrder::megatron_distributed; }
    bool detect(const std::filesystem::path& dir) const override;
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    CheckpointState load(const std::filesystem::path& dir) override;
    // The model tensors as placeholders, each made from its chunks when asked for (a view of
    // the file when one chunk holds it whole); no optimizer state.
    StreamedState load_streamed(const std::filesystem::path& dir) override;
    // The common state's args, no tensor read.
    CheckpointArgs load_args(const std::filesystem::path& dir) override;

    // One rank (whole tensors, layout 1x1), each chunk made as it is written.
    void save_streamed(const std::filesystem::path& dir, const CheckpointLayout& layout,
                       const StreamedStateFn& rank_state) override;

    bool saves_collectively() const override { return true; }
    void save_collective(const std::filesystem::path& dir, const CheckpointState& share,
                         Communicator& world) override;

    // core_v0.19's dp_reshardable needs Megatron's order of the parameters in its buffers
    // (torch_dist_buckets.h).
    std::string distributed_layout_refusal(DistributedOptimizerLayout layout,
                                           const CheckpointArgs& args,
                                           const std::vector<std::string>& names) const override;

    bool set_verify_integrity(bool on) override {
        verify_integrity_ = on;
        return true;
    }

  private:
    bool verify_integrity_ = false;
};

}  // namespace mt::plugins::torch_dist
