#include "mt/optim/optimizer.h"

#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/ops/adamw.h"

namespace mt::optim {

OptimizerType parse_optimizer_type(const std::string& text) {
    if (text == "adam") return OptimizerType::adam;
    if (text == "sgd") return OptimizerType::sgd;
    MT_FAIL("--optimizer ", text, ": supported are adam and sgd");
}

Optimizer::Optimizer(std::vector<nn::Parameter*> parameters, OptimizerConfig config)
    : parameters_(std::move(parameters)), config_(config) {
    for (nn::Parameter* p : parameters_) {
        MT_CHECK(p->value.dtype() == DType::f32 && p->value.is_contiguous(), "parameter ", p->name,
                 ": the optimizer updates contiguous f32 tensors, got ", p->value.describe());
        first_.push_back(Tensor::zeros(p->value.shape(), DType::f32));
        second_.push_back(config.type == OptimizerType::adam
                              ? Tensor::zeros(p->value.shape(), DType::f32)
                              : Tensor());
    }
}

void Optimizer::set_config(const OptimizerConfig& config) {
    MT_CHECK(config.type == config_.type, "the optimizer's type cannot change");
    config_ = config;
}

void Optimizer::zero_grad() {
    for (nn::Parameter* p : parameters_) {
        float* g = p->grad.data<float>();
        std::fill(g, g + p->grad.numel(), 0.0f);
    }
}

void Optimizer::step(double lr, double weight_decay) {
    ++steps_;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        nn::Parameter& p = *parameters_[i];
        const double wd = p.weight_decay ? weight_decay : 0.0;
        if (config_.type == OptimizerType::adam) {
            ops::AdamWConfig c{lr, config_.adam_beta1, config_.adam_beta2, config_.adam_eps, wd};
            ops::adamw_step(p.value, p.grad, first_[i], second_[i], c, steps_);
            continue;
        }
        // torch.optim.SGD: d = g + wd·p; buf = d on the first step, else m·buf + d; p -= lr·buf.
        float* v = p.value.data<float>();
        const float* g = p.grad.data<float>();
        float* buf = first_[i].data<float>();
        const int64_t n = p.value.numel();
        const float m = static_cast<float>(config_.sgd_momentum);
        const float w = static_cast<float>(wd), l = static_cast<float>(lr);
        const bool first_step = steps_ == 1;
#pragma omp parallel for if (n > (1 << 16))
        for (int64_t k = 0; k < n; ++k) {
            float d = g[k] + w * v[k];
            buf[k] = (first_step || m == 0.0f) ? d : m * buf[k] + d;
            v[k] -= l * buf[k];
        }
    }
}

}  // namespace mt::optim
