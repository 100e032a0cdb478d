// Megatron's loss scaling for fp16 training (megatron/core/optimizer/grad_scaler.py): the loss is
// multiplied by scale() before the backward and the gradients divided by it after; an iteration
// whose unscaled gradients hold an inf or NaN is skipped (no update, no learning-rate step).
// --loss-scale fixes the scale (ConstantGradScaler); otherwise it is dynamic
// (DynamicGradScaler): halved after `hysteresis` overflowing iterations, doubled after
// `window` clean ones in a row.
#pragma once

#include <cstdint>
#include <optional>

#include "mt/api.h"

namespace mt::optim {

struct GradScalerConfig {
    std::optional<double> loss_scale;     // --loss-scale: a constant scale
    double initial_scale = 4294967296.0;  // --initial-loss-scale (2^32)
    double min_scale = 1.0;               // --min-loss-scale
    int64_t window = 1000;                // --loss-scale-window (growth interval)
    int64_t hysteresis = 2;               // --hysteresis
};

// What a checkpoint keeps of a dynamic scaler (DynamicGradScaler.state_dict()).
struct GradScalerState {
    float scale = 1.0f;
    int64_t growth_tracker = 0, hysteresis_tracker = 0;
};

class MT_API GradScaler {
  public:
    // Megatron's asserts, as mt::Errors naming the flags.
    explicit GradScaler(const GradScalerConfig& config);

    bool dynamic() const { return !config_.loss_scale.has_value(); }
    // The current scale (f32, as Megatron keeps it).
    float scale() const { return scale_; }
    // After each iteration: whether its gradients overflowed.
    void update(bool found_inf);

    GradScalerState state() const { return {scale_, growth_tracker_, hysteresis_tracker_}; }
    void set_state(const GradScalerState& state);

  private:
    GradScalerConfig config_;
    float scale_;
    int64_t growth_tracker_ = 0, hysteresis_tracker_;
};

}  // namespace mt::optim
