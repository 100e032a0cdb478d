// What a Megatron training loop runs on, assembled once for megatron-train's pretraining and
// megatron-eval's finetuning: the data-parallel gradient buffers (the dense parameters' and, with
// the distributed optimizer, the MoE experts'), the optimizer over them, the learning-rate
// schedule, the trainer over the run's groups, and its TensorBoard writer.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/io/tensorboard_writer.h"
#include "mt/model.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/train/checkpointing.h"
#include "mt/train/trainer.h"
#include "mt/train/training_flags.h"

namespace mt::train {

class MT_API TrainingRun {
  public:
    // `flags`: the optimizer (--optimizer, Adam's settings, --weight-decay), the data-parallel
    // buffers (--use-distributed-optimizer, ...) and --tensorboard-dir, which `writes_tensorboard`
    // (Megatron's last rank) writes; `schedule` and `options` as the caller scales its batches.
    TrainingRun(Model& model, Backend& backend, const parallel::ParallelState& state,
                const TrainingFlags& flags, const optim::LrScheduleConfig& schedule,
                const TrainerOptions& options, std::function<void(const std::string&)> log,
                bool writes_tensorboard);
    TrainingRun(const TrainingRun&) = delete;
    TrainingRun& operator=(const TrainingRun&) = delete;

    Trainer& trainer() { return trainer_; }
    optim::Optimizer& optimizer() { return optimizer_; }
    // What checkpoints capture and restore.
    TrainingParts parts();

  private:
    Model& model_;
    const parallel::ParallelState& state_;
    parallel::GradBuffers buffers_;
    optim::Optimizer optimizer_;
    optim::LrScheduler scheduler_;
    Trainer trainer_;
    std::unique_ptr<io::TensorBoardWriter> tensorboard_;
};

}  // namespace mt::train
