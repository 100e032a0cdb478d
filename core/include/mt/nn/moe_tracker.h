// What a model's MoE layers share with the training loop, once per iteration: the scale of the
// auxiliary losses' gradient (Megatron's MoEAuxLossAutoScaler.main_loss_backward_scale) and the
// auxiliary losses to report (Megatron's aux-loss tracker: "load_balancing_loss", "z_loss").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/nn/moe_config.h"

namespace mt::nn {

// The router losses Megatron logs and backpropagates: those with a coefficient.
MT_API bool reports_load_balancing(const RouterConfig& router);
MT_API bool reports_z_loss(const RouterConfig& router);

class MT_API MoeTracker {
  public:
    // The losses `router` reports (each reported, 0 when no layer here adds to it) of a model of
    // `moe_layers` MoE layers in all (the report averages over them).
    MoeTracker(const RouterConfig& router, int64_t moe_layers);

    // The aux losses' gradient scale, set by the trainer before each iteration's backward passes
    // (the loss scale over the micro-batches and data-parallel ranks it sums gradients over).
    void set_grad_scale(double scale) { grad_scale_ = scale; }
    double grad_scale() const { return grad_scale_; }

    // A layer's loss (divided by its coefficient) for one micro-batch.
    void add(const std::string& name, double value);
    // Σ over micro-batches and this model's layers of each loss / the whole model's MoE layers,
    // in the names' order; then clears. The trainer sums the pipeline stages and averages the
    // micro-batches.
    std::vector<std::pair<std::string, double>> take();

  private:
    std::vector<std::pair<std::string, double>> sums_;
    int64_t moe_layers_;
    double grad_scale_ = 1.0;
};

}  // namespace mt::nn
