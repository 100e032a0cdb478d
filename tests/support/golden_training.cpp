#include "golden_training.h"

namespace mt::test {

std::unique_ptr<GoldenTraining> golden_training(Model& model) {
    optim::OptimizerConfig oc;
    oc.adam_beta1 = 0.9;
    oc.adam_beta2 = 0.95;
    oc.adam_eps = 1e-8;
    optim::LrScheduleFlags f;
    f.train_iters = 20;
    f.global_batch_size = 4;
    f.lr = 1e-3;
    f.min_lr = 1e-4;
    f.lr_decay_style = "cosine";
    f.lr_warmup_iters = 3;
    f.start_weight_decay = f.end_weight_decay = 0.1;
    train::TrainerOptions o;
    o.micro_batch_size = 2;
    o.global_batch_size = 4;
    o.train_iters = 20;
    o.log_interval = 0;
    o.eval_interval = 0;
    o.clip_grad = 1.0;
    return std::unique_ptr<GoldenTraining>(new GoldenTraining{
        optim::Optimizer(single_process_context().backend, model.parameters(), oc),
        optim::LrScheduler(optim::schedule_config_from_flags(f)), o});
}

}  // namespace mt::test
