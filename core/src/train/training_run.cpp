#include "mt/train/training_run.h"

#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"

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
    // Muon's layer-wise distributed optimizer: each parameter's update and state on one rank of
    // the ranks its gradient is summed over.
    if (flags.optimizer_config.type == optim::OptimizerType::muon &&
        flags.optimizer_config.muon.layer_wise)
        optimizer_.shard_layer_wise(
            [&state](const nn::Parameter& p) -> Communicator& { return state.dp_of(p.expert); });
    // Muon's --muon-tp-mode duplicated / distributed: a piece's tensor-parallel ranks and cut.
    if (flags.optimizer_config.type == optim::OptimizerType::muon &&
        flags.optimizer_config.muon.tp_mode != "blockwise")
        optimizer_.set_tensor_parallel([&state](const nn::Parameter& p) {
            optim::MuonTensorParallel tp;
            tp.group = &state.tp_of(p.expert);
            if (p.shard.kind == ShardSpec::Kind::column || p.shard.kind == ShardSpec::Kind::row)
                tp.partition_dim = p.shard.partition_dim;
            return tp;
        });
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
