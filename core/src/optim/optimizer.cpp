#include "mt/optim/optimizer.h"

#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::optim {

OptimizerType parse_optimizer_type(const std::string& text) {
    if (text == "adam") return OptimizerType::adam;
    if (text == "sgd") return OptimizerType::sgd;
    MT_FAIL("--optimizer ", text, ": supported are adam and sgd");
}

Optimizer::Optimizer(Backend& backend, std::vector<nn::Parameter*> parameters,
                     OptimizerConfig config)
    : backend_(&backend), parameters_(std::move(parameters)), config_(config) {
    for (nn::Parameter* p : parameters_) {
        MT_CHECK(p->value.dtype() == DType::f32 && p->value.is_contiguous(), "parameter ", p->name,
                 ": the optimizer updates contiguous f32 tensors, got ", p->value.describe());
        first_.push_back(backend.zeros(p->value.shape(), DType::f32));
        second_.push_back(config.type == OptimizerType::adam
                              ? backend.zeros(p->value.shape(), DType::f32)
                              : Tensor());
    }
}

void Optimizer::set_config(const OptimizerConfig& config) {
    MT_CHECK(config.type == config_.type, "the optimizer's type cannot change");
    config_ = config;
}

void Optimizer::zero_grad() {
    for (nn::Parameter* p : parameters_) backend_->fill(p->grad, 0.0);
}

void Optimizer::step(double lr, double weight_decay) {
    ++steps_;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        nn::Parameter& p = *parameters_[i];
        const double wd = p.weight_decay ? weight_decay : 0.0;
        if (config_.type == OptimizerType::adam)
            backend_->adamw_step(
                p.value, p.grad, first_[i], second_[i],
                ops::AdamWConfig{lr, config_.adam_beta1, config_.adam_beta2, config_.adam_eps, wd},
                steps_);
        else
            backend_->sgd_step(p.value, p.grad, first_[i],
                               ops::SgdConfig{lr, config_.sgd_momentum, wd}, steps_);
    }
}

}  // namespace mt::optim
