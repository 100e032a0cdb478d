// The `deepspeed` CheckpointFormat (read only): the checkpoints Megatron-DeepSpeed's training
// loop saves through DeepSpeed's engine, a `latest` file naming a tag folder (global_stepN/) that
// holds mp_rank_TT_model_states.pt (args, iteration, the learning-rate schedule; the model too
// without the pipeline engine, --no-pipeline-parallel) and, with the pipeline engine, one
// layer_LL-model_TT-model_states.pt per layer of GPTModelPipe and tensor rank: the embedding
// (layer 01), the transformer layers, the final norm, an untied output head (lm_head). Each
// (tensor rank, stage) is read as Megatron-DeepSpeed's tools/convert_checkpoint/
// deepspeed_to_megatron.py writes it (the legacy model's nested state dict, the transformer
// layers split evenly over the stages), so the tools read it as that Megatron checkpoint.
// The optimizer state is read where it is the torch optimizer Megatron-DeepSpeed built (one rank,
// fp32, ZeRO stage 0) or ZeRO stage 1 or 2's shards (deepspeed_zero_shards.h: any layout, fp32
// or bf16, joined over the data-parallel ranks); a universal checkpoint's folder
// (deepspeed_universal.h) is read as the whole model with its optimizer state; MoE layers' expert
// files and their optimizer files per expert-parallel rank are joined in (deepspeed_moe_files.h,
// without the pipeline engine, as its MoE scripts run); other optimizer
// states (fp16's loss scaler, mixed precision or several ranks without ZeRO) and the random
// states are not (resume those with --no-load-optim).
#pragma once

#include "mt/checkpoint.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// A torch.save file of a DeepSpeed checkpoint; mt::Error naming it when it cannot be read.
io::PyValue read_deepspeed_file(const std::filesystem::path& file);

class DeepSpeedCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "deepspeed"; }
    // Before torch: Megatron-DeepSpeed also writes latest_checkpointed_iteration.txt, naming an
    // iter_ folder that does not exist.
    DetectionOrder detection_order() const override { return DetectionOrder::megatron_distributed; }
    // `dir` holds DeepSpeed's `latest` file naming a tag folder with mp_rank_00_model_states.pt,
    // or is such a tag folder.
    bool detect(const std::filesystem::path& dir) const override;
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    CheckpointState load(const std::filesystem::path& dir) override;
    CheckpointArgs load_args(const std::filesystem::path& dir) override;

    bool per_rank_files() const override { return true; }
    CheckpointLayout layout(const std::filesystem::path& dir) override;
    CheckpointState load_rank(const std::filesystem::path& dir, int64_t tp_rank,
                              int64_t pp_rank) override;
    void save_ranks(const std::filesystem::path& dir, const CheckpointLayout& layout,
                    const RankStateFn& rank_state) override;
};

}  // namespace mt::plugins::torch_ckpt
