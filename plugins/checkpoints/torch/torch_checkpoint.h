// The `torch` CheckpointFormat: Megatron's per-rank layout (torch_layout.h), one torch.save file
// per tensor rank and pipeline stage whose dict is Megatron's generate_state_dict (torch_state.h).
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::torch_ckpt {

// A per-rank format's load(): rank (0, 0) of a one-rank checkpoint; a split one (`kind`: "",
// "DeepSpeed ") is an mt::Error pointing at megatron-convert.
CheckpointState load_single_rank(CheckpointFormat& format, const std::filesystem::path& dir,
                                 const char* kind);

class TorchCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "torch"; }
    DetectionOrder detection_order() const override { return DetectionOrder::megatron_per_rank; }
    bool detect(const std::filesystem::path& dir) const override;
    // One rank (a 1x1 layout); a split checkpoint is an mt::Error pointing at megatron-convert.
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    CheckpointState load(const std::filesystem::path& dir) override;
    // Rank (0, 0)'s file's args, its tensors not read.
    CheckpointArgs load_args(const std::filesystem::path& dir) override;

    bool per_rank_files() const override { return true; }
    CheckpointLayout layout(const std::filesystem::path& dir) override;
    CheckpointState load_rank(const std::filesystem::path& dir, int64_t tp_rank,
                              int64_t pp_rank) override;
    void save_ranks(const std::filesystem::path& dir, const CheckpointLayout& layout,
                    const RankStateFn& rank_state) override;
    // Every rank's file open at once, their storage records written in step (record k of each
    // rank, then k + 1), each tensor made when its record is reached and dropped after it.
    void save_streamed(const std::filesystem::path& dir, const CheckpointLayout& layout,
                       const StreamedStateFn& rank_state) override;
    void save_stage(const std::filesystem::path& dir, const CheckpointLayout& layout, int64_t stage,
                    bool writer, const std::function<CheckpointState(int64_t tp_rank)>& rank_state,
                    Communicator& world) override;
};

}  // namespace mt::plugins::torch_ckpt
