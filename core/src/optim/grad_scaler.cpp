#include "mt/optim/grad_scaler.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::optim {

GradScaler::GradScaler(const GradScalerConfig& config)
    : config_(config),
      scale_(float(config.loss_scale.value_or(config.initial_scale))),
      hysteresis_tracker_(config.hysteresis) {
    if (config.loss_scale) {
        MT_CHECK(*config.loss_scale > 0, "--loss-scale must be positive, got ", *config.loss_scale);
        return;
    }
    MT_CHECK(config.min_scale > 0 && config.min_scale <= config.initial_scale, "--min-loss-scale (",
             config.min_scale, ") must be positive and at most ", "--initial-loss-scale (",
             config.initial_scale, ")");
    MT_CHECK(config.window > 0, "--loss-scale-window must be positive, got ", config.window);
    MT_CHECK(config.hysteresis > 0, "--hysteresis must be positive, got ", config.hysteresis);
}

void GradScaler::update(bool found_inf) {
    if (!dynamic()) return;
    // DynamicGradScaler.update: growth_factor 2, backoff_factor 0.5, in f32.
    if (found_inf) {
        growth_tracker_ = 0;
        if (--hysteresis_tracker_ <= 0) scale_ = std::max(scale_ * 0.5f, float(config_.min_scale));
        return;
    }
    if (++growth_tracker_ == config_.window) {
        growth_tracker_ = 0;
        hysteresis_tracker_ = config_.hysteresis;
        scale_ *= 2.0f;
    }
}

void GradScaler::set_state(const GradScalerState& state) {
    MT_CHECK(state.scale > 0, "the checkpoint's loss scale ", state.scale, " is not positive");
    if (!dynamic()) return;  // a constant scale stays the flag's, as ConstantGradScaler does
    scale_ = state.scale;
    growth_tracker_ = state.growth_tracker;
    hysteresis_tracker_ = state.hysteresis_tracker;
}

}  // namespace mt::optim
