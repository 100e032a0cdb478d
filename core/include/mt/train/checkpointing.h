// Between a training run and a CheckpointFormat: captures the model, optimizer, schedule, dropout
// stream and progress into a CheckpointState, and restores one (ours or Megatron's) into them
// as Megatron's load_checkpoint does, honouring --finetune, --no-load-optim and --no-load-rng.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/train/trainer.h"

namespace mt::parallel {
class GradBuffer;
class ParallelState;
}  // namespace mt::parallel

namespace mt::train {

// What a run is made of, as checkpoints see it. In a parallel run `parallel` gives the groups
// (tensor-parallel pieces are gathered on capture and cut on restore) and `grad_buffer` the
// distributed optimizer's layout (its `optimizer` then holds this rank's shard of the buffer).
struct TrainingParts {
    Model& model;
    optim::Optimizer& optimizer;
    optim::LrScheduler& scheduler;
    Trainer& trainer;
    const parallel::ParallelState* parallel = nullptr;
    parallel::GradBuffer* grad_buffer = nullptr;
    // The distributed optimizer's buffer of the MoE experts (over the expert-data-parallel
    // group; its shard's pieces follow grad_buffer's in optimizer.parameters()), or null.
    parallel::GradBuffer* expert_grad_buffer = nullptr;
};

struct CaptureOptions {
    bool optimizer = true;  // false: --no-save-optim
    bool rng = true;        // false: --no-save-rng
    // This rank's own share, for a format whose ranks write what they hold (torch_dist), with
    // nothing gathered: the main replicas of the model and its moments as they lie here (pieces
    // placed in the whole tensors: mt/checkpoint/reshard.h piece_boxes) from data-parallel rank
    // 0, a tensor replicated over the tensor-parallel group from its rank 0 alone; with the
    // distributed optimizer (Adam), its ranges here on every rank (OptimizerCheckpoint::shards)
    // and the moments in params left undefined. Not collective, but gathered (below).
    bool own_share = false;
    // With own_share and the distributed optimizer, the layout its state is kept in
    // (OptimizerCheckpoint::layout): this rank's ranges as they lie (core_v0.13's
    // fully_sharded_model_space), or gathered over the data-parallel group (as Megatron gathers
    // it too) into whole pieces box for box with the model's (core_v0.19's fully_reshardable)
    // or into every piece this rank holds (core_v0.19's dp_reshardable: collective).
    DistributedOptimizerLayout distributed_layout =
        DistributedOptimizerLayout::fully_sharded_model_space;
    // A pipeline stage's copy of a tied weight (the last stage's output_layer.weight) under its
    // own name, with its own optimizer moments, as Megatron's torch files keep it on that stage
    // (otherwise only the original is captured).
    bool stage_copies = false;
    // Saving the optimizer as core_v0.19 keeps it (OptimizerCheckpoint::core_v0_19); Muon and
    // muP runs always do.
    bool core_v0_19 = false;
    // Megatron's args Namespace entries; iteration and consumed samples are added from the run.
    CheckpointArgs args;
};

// The run's state as whole tensors (every parameter and optimizer moment joined over the
// tensor- and data-parallel groups, and every expert-parallel rank's experts): collective, every
// rank of the run calls it and gets it.
// With own_share, this rank's share instead.
MT_API CheckpointState capture_checkpoint(const TrainingParts& parts, const CaptureOptions& o);

// Restoring the optimizer also takes the checkpoint's Adam betas and eps (SGD momentum) over the
// flags', as Megatron does (torch's load_state_dict restores the parameter groups).
// Where a resumed run's learning-rate schedule settings (peak and floor, warmup and decay lengths,
// decay style, weight-decay schedule) come from: by default flags and checkpoint must agree
// (Megatron's assertion), --override-opt_param-scheduler takes the flags',
// --use-checkpoint-opt_param-scheduler the checkpoint's.
enum class ScheduleSettings { must_match, from_flags, from_checkpoint };

struct RestoreOptions {
    bool optimizer = true;  // false: --no-load-optim (the schedule is not loaded either)
    ScheduleSettings schedule = ScheduleSettings::must_match;
    bool rng = true;        // false: --no-load-rng
    bool finetune = false;  // model only; iteration and consumed samples start at 0
};

// Copies the checkpoint (whole tensors) into the run, each rank taking its pieces. Every model
// parameter must be in state.model with its whole shape and dtype (mt::Error naming the key and
// both shapes otherwise), under its own name or the other --transformer-impl's (norms fused into
// the linears or not); Transformer Engine
// `_extra_state` entries are ignored; any other unknown tensor is an error.
MT_API void restore_checkpoint(const CheckpointState& state, const TrainingParts& parts,
                               const RestoreOptions& o);

// Megatron's spellings of the schedule's styles ("inverse-square-root", "WSD", ...).
MT_API std::string lr_decay_style_name(optim::LrDecayStyle style);
MT_API std::string wd_incr_style_name(optim::WdIncrStyle style);

}  // namespace mt::train
