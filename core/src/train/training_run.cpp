#include "mt/train/training_run.h"

namespace mt::train {

TrainingRun::TrainingRun(Model& model, Backend& backend, const parallel::ParallelState& state,
                         const TrainingFlags& flags, const optim::LrScheduleConfig& schedule,
                         const TrainerOptions& options, std::function<void(const std::string&)> log,
                         bool writes_tensorboard)
    : model_(model),
      state_(state),
      buffers_(parallel::make_grad_buffers(model.parameters(), state, flags.data_parallel)),
      optimizer_(backend, buffers_.optimized, flags.optimizer_config),
      scheduler_(schedule),
      trainer_(model, optimizer_, scheduler_, options, std::move(log)) {
    trainer_.set_parallel(state, buffers_.dense.get(), buffers_.experts.get());
    if (!flags.tensorboard_dir.empty() && writes_tensorboard) {
        tensorboard_ = std::make_unique<io::TensorBoardWriter>(flags.tensorboard_dir);
        trainer_.set_tensorboard(tensorboard_.get());
    }
}

TrainingParts TrainingRun::parts() {
    return TrainingParts{model_,
                         optimizer_,
                         scheduler_,
                         trainer_,
                         &state_,
                         buffers_.dense.get(),
                         buffers_.experts.get()};
}

}  // namespace mt::train
