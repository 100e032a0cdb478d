#include "mt/train/checkpointing.h"

#include <map>

#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::train {

namespace {

// Copies `from` (checkpoint tensor `key`) into `to`, checking shape and dtype.
void copy_checked(const std::string& what, const std::string& key, const Tensor& from, Tensor& to) {
    MT_CHECK(from.shape() == to.shape(), what, " '", key, "' has shape ", shape_str(from.shape()),
             " in the checkpoint but ", shape_str(to.shape()), " in the model");
    MT_CHECK(from.dtype() == to.dtype(), what, " '", key, "' is ", from.describe(),
             " in the checkpoint but the model holds ", to.describe());
    to.copy_from(from);
}

// The entry for `name`, under either implementation's spelling.
template <class Map>
auto find_either(Map& map, const std::string& name) {
    auto it = map.find(name);
    return it != map.end() ? it : map.find(other_impl_name(name));
}

void restore_optimizer(const OptimizerCheckpoint& saved, const TrainingParts& parts) {
    const std::string type =
        parts.optimizer_config.type == optim::OptimizerType::adam ? "adam" : "sgd";
    MT_CHECK(saved.type == type, "the checkpoint's optimizer state is for ", saved.type,
             " but this run uses --optimizer ", type, " (use --no-load-optim)");
    std::map<std::string, const OptimizerParamState*> by_name;
    for (const auto& s : saved.params) by_name[s.name] = &s;
    auto& params = parts.optimizer.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
        auto it = find_either(by_name, params[i]->name);
        MT_CHECK(it != by_name.end(), "the checkpoint has no optimizer state for '",
                 params[i]->name, "'");
        copy_checked("optimizer state of", params[i]->name, it->second->exp_avg,
                     parts.optimizer.first()[i]);
        if (type == "adam")
            copy_checked("optimizer state of", params[i]->name, it->second->exp_avg_sq,
                         parts.optimizer.second()[i]);
    }
    parts.optimizer.set_steps(saved.step);
}

}  // namespace

std::string lr_decay_style_name(optim::LrDecayStyle style) {
    switch (style) {
        case optim::LrDecayStyle::constant:
            return "constant";
        case optim::LrDecayStyle::linear:
            return "linear";
        case optim::LrDecayStyle::cosine:
            return "cosine";
        case optim::LrDecayStyle::inverse_square_root:
            return "inverse-square-root";
        case optim::LrDecayStyle::wsd:
            return "WSD";
    }
    MT_FAIL("unknown learning-rate decay style");
}

std::string wd_incr_style_name(optim::WdIncrStyle style) {
    switch (style) {
        case optim::WdIncrStyle::constant:
            return "constant";
        case optim::WdIncrStyle::linear:
            return "linear";
        case optim::WdIncrStyle::cosine:
            return "cosine";
    }
    MT_FAIL("unknown weight-decay increment style");
}

CheckpointState capture_checkpoint(const TrainingParts& parts, const CaptureOptions& o) {
    CheckpointState s;
    s.iteration = parts.trainer.iteration();
    s.consumed_train_samples = parts.trainer.consumed_train_samples();
    s.consumed_valid_samples = parts.trainer.consumed_valid_samples();
    s.args = o.args;
    s.args.emplace_back("iteration", s.iteration);
    s.args.emplace_back("consumed_train_samples", s.consumed_train_samples);
    s.args.emplace_back("consumed_valid_samples", s.consumed_valid_samples);
    for (nn::Parameter* p : parts.model.parameters())
        s.model.emplace_back(
            p->name, ShardedTensor{p->value, p->value.shape(), Shape(p->value.shape().size(), 0)});

    const auto& sc = parts.scheduler.config();
    if (o.optimizer) {
        OptimizerCheckpoint opt;
        const auto& c = parts.optimizer_config;
        opt.type = c.type == optim::OptimizerType::adam ? "adam" : "sgd";
        opt.step = parts.optimizer.steps();
        opt.lr = parts.scheduler.lr();
        opt.weight_decay = parts.scheduler.weight_decay();
        opt.max_lr = sc.max_lr;
        opt.min_lr = sc.min_lr;
        opt.beta1 = c.adam_beta1;
        opt.beta2 = c.adam_beta2;
        opt.eps = c.adam_eps;
        opt.momentum = c.sgd_momentum;
        auto& params = parts.optimizer.parameters();
        for (size_t i = 0; i < params.size(); ++i) {
            OptimizerParamState ps;
            ps.name = params[i]->name;
            ps.exp_avg = parts.optimizer.first()[i];
            if (opt.type == "adam") ps.exp_avg_sq = parts.optimizer.second()[i];
            ps.weight_decay = params[i]->weight_decay;
            opt.params.push_back(std::move(ps));
        }
        s.optimizer = std::move(opt);

        SchedulerCheckpoint sch;
        sch.max_lr = sc.max_lr;
        sch.min_lr = sc.min_lr;
        sch.lr_warmup_steps = sc.lr_warmup_steps;
        sch.num_steps = parts.scheduler.num_steps();
        sch.lr_decay_steps = sc.lr_decay_steps;
        sch.lr_decay_style = lr_decay_style_name(sc.lr_decay_style);
        sch.start_wd = sc.start_wd;
        sch.end_wd = sc.end_wd;
        sch.wd_incr_steps = sc.wd_incr_steps;
        sch.wd_incr_style = wd_incr_style_name(sc.wd_incr_style);
        s.scheduler = sch;
    }
    if (o.rng) s.rng = RngCheckpoint{parts.trainer.dropout_seed(), parts.trainer.dropout_offset()};
    return s;
}

void restore_checkpoint(const CheckpointState& state, const TrainingParts& parts,
                        const RestoreOptions& o) {
    load_model_weights(state, parts.model, WeightLoad::copy);
    if (o.finetune) return;
    parts.trainer.set_progress(state.iteration, state.consumed_train_samples,
                               state.consumed_valid_samples);
    if (o.optimizer) {
        MT_CHECK(state.optimizer_not_loaded.empty(), state.optimizer_not_loaded,
                 " (use --no-load-optim or --finetune)");
        MT_CHECK(state.optimizer && state.scheduler,
                 "the checkpoint has no optimizer state: use --no-load-optim or --finetune");
        restore_optimizer(*state.optimizer, parts);
        parts.scheduler.set_num_steps(state.scheduler->num_steps);
    }
    if (o.rng && state.rng)
        parts.trainer.set_dropout_rng(state.rng->dropout_seed, state.rng->dropout_offset);
}

}  // namespace mt::train
