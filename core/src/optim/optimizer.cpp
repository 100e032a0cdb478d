#include "mt/optim/optimizer.h"

#include <algorithm>
#include <numeric>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::optim {

OptimizerType parse_optimizer_type(const std::string& text) {
    if (text == "adam") return OptimizerType::adam;
    if (text == "sgd") return OptimizerType::sgd;
    if (text == "muon" || text == "dist_muon") return OptimizerType::muon;
    MT_FAIL("--optimizer ", text.substr(0, 100), ": supported are adam, sgd and muon");
}

std::string optimizer_type_name(OptimizerType type) {
    switch (type) {
        case OptimizerType::adam:
            return "adam";
        case OptimizerType::sgd:
            return "sgd";
        case OptimizerType::muon:
            return "muon";
    }
    return "adam";
}

Optimizer::Optimizer(Backend& backend, std::vector<nn::Parameter*> parameters,
                     OptimizerConfig config)
    : backend_(&backend), parameters_(std::move(parameters)), config_(config) {
    if (config.type == OptimizerType::muon) check_muon_config(config.muon);
    for (size_t i = 0; i < parameters_.size(); ++i) {
        const nn::Parameter* p = parameters_[i];
        const DType dtype = p->value.dtype();
        const bool half = half_precision(*p);
        MT_CHECK((dtype == DType::f32 || half) && p->value.is_contiguous() &&
                     p->grad.dtype() == DType::f32,
                 "parameter ", p->name,
                 ": the optimizer updates contiguous f32, bf16 or f16 tensors with f32 grads, got ",
                 p->value.describe(), " with grad ", p->grad.describe());
        masters_.push_back(half ? backend.empty(p->value.shape(), DType::f32) : Tensor());
        if (config.type == OptimizerType::muon) muon_.push_back(managed_by_muon(*p));
        first_.push_back(backend.zeros(p->value.shape(), DType::f32));
        second_.push_back(adam_moments(i) ? backend.zeros(p->value.shape(), DType::f32) : Tensor());
    }
    reload_model_params();
}

void Optimizer::shard_layer_wise(
    const std::function<Communicator&(const nn::Parameter&)>& group_of) {
    MT_CHECK(steps_ == 0 && owner_.empty(), "shard_layer_wise before the first step, once");
    const size_t n = parameters_.size();
    group_.resize(n);
    owner_.assign(n, 0);
    // Per group, its parameters by size (ties in order), dealt 0, 1, .., k-1, k-1, .., 0, 0, ..
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return parameters_[a]->value.numel() < parameters_[b]->value.numel();
    });
    std::vector<std::pair<Communicator*, int64_t>> dealt;  // per group, parameters dealt
    for (size_t i : order) {
        Communicator& g = group_of(*parameters_[i]);
        group_[i] = &g;
        auto it =
            std::find_if(dealt.begin(), dealt.end(), [&](const auto& d) { return d.first == &g; });
        if (it == dealt.end()) it = dealt.insert(dealt.end(), {&g, 0});
        const int64_t k = g.size(), at = it->second++ % (2 * k);
        owner_[i] = int(at < k ? at : 2 * k - 1 - at);
        if (owner_[i] == g.rank()) continue;
        // Another rank keeps its state.
        first_[i] = Tensor();
        second_[i] = Tensor();
        masters_[i] = Tensor();
    }
}

void Optimizer::set_tensor_parallel(
    const std::function<MuonTensorParallel(const nn::Parameter&)>& of) {
    tp_.clear();
    for (const nn::Parameter* p : parameters_) tp_.push_back(of(*p));
}

Optimizer::State Optimizer::whole_state() {
    if (!layer_wise()) return {first_, second_, masters_};
    State out{first_, second_, masters_};
    // (Each kind of state is defined on the owner where the parameter has it: the owner's
    // rank learns nothing new from the others.)
    for (size_t i = 0; i < parameters_.size(); ++i) {
        const nn::Parameter& p = *parameters_[i];
        for (auto [list, has] :
             {std::pair{&out.first, true}, std::pair{&out.second, adam_moments(i)},
              std::pair{&out.masters, half_precision(p)}}) {
            if (!has) continue;
            Tensor& t = (*list)[i];
            if (!t.defined()) t = backend_->zeros(p.value.shape(), DType::f32);
            group_[i]->broadcast(t, owner_[i]);
        }
    }
    return out;
}

bool Optimizer::adam_moments(size_t i) const {
    return config_.type == OptimizerType::adam ||
           (config_.type == OptimizerType::muon && !muon_managed(i));
}

bool Optimizer::half_precision(const nn::Parameter& p) {
    return p.value.dtype() == DType::bf16 || p.value.dtype() == DType::f16;
}

void Optimizer::reload_model_params() {
    for (size_t i = 0; i < parameters_.size(); ++i)
        if (masters_[i].defined()) backend_->cast(parameters_[i]->value, masters_[i]);
}

void Optimizer::set_config(const OptimizerConfig& config) {
    MT_CHECK(config.type == config_.type, "the optimizer's type cannot change");
    config_ = config;
}

void Optimizer::zero_grad() {
    for (nn::Parameter* p : parameters_) backend_->fill(p->grad, 0.0);
}

bool mup_scaled(const OptimizerConfig& config, const nn::Parameter& p, bool decoupled) {
    if (config.mup_width_mult == 1.0) return false;
    if (config.type == OptimizerType::sgd)
        return !p.mup_hidden && !(decoupled && p.embedding_or_output);
    return p.mup_hidden;
}

void Optimizer::step(double step_lr, double weight_decay, std::optional<double> embedding_lr,
                     double grad_scale, std::optional<double> mup_lr) {
    MT_CHECK(config_.mup_width_mult == 1.0 || mup_lr,
             "the optimizer's muP learning rate is missing");
    MT_CHECK(config_.mup_width_mult == 1.0 || config_.type != OptimizerType::muon,
             "not supported yet: --use-mup with --optimizer muon");
    ++steps_;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        nn::Parameter& p = *parameters_[i];
        if (layer_wise() && owner_[i] != group_[i]->rank()) continue;  // its owner's
        const double wd = p.weight_decay ? weight_decay : 0.0;
        const bool mup = mup_scaled(config_, p, embedding_lr.has_value());
        const double lr = mup                                     ? *mup_lr
                          : embedding_lr && p.embedding_or_output ? *embedding_lr
                                                                  : step_lr;
        // (muP divides Adam's eps of the parameters it moves by the width too.)
        const double eps =
            mup ? config_.adam_eps * (1.0 / config_.mup_width_mult) : config_.adam_eps;
        const bool half = masters_[i].defined();
        Tensor& updated = half ? masters_[i] : p.value;
        // A half model's weights are its main parameters rounded, as Megatron rounds them.
        if (muon_managed(i)) {
            muon_step(*backend_, updated, p.grad, first_[i], p.name, lr, wd, grad_scale,
                      config_.muon, tp_.empty() ? MuonTensorParallel() : tp_[i]);
            if (half) backend_->cast(updated, p.value);
        } else if (config_.type != OptimizerType::sgd) {
            const ops::AdamWConfig adam{lr, config_.adam_beta1, config_.adam_beta2, eps,
                                        wd, grad_scale};
            if (half)
                backend_->adamw_step_rounded(updated, p.grad, first_[i], second_[i], adam, steps_,
                                             p.value);
            else
                backend_->adamw_step(updated, p.grad, first_[i], second_[i], adam, steps_);
        } else {
            backend_->sgd_step(updated, p.grad, first_[i],
                               ops::SgdConfig{lr, config_.sgd_momentum, wd, grad_scale}, steps_);
            if (half) backend_->cast(updated, p.value);
        }
    }
    // Layer-wise: each owner's updated weights to the rest of its group.
    for (size_t i = 0; i < owner_.size(); ++i)
        group_[i]->broadcast(parameters_[i]->value, owner_[i]);
}

}  // namespace mt::optim
