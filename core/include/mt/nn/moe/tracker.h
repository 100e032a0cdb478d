// What a model's MoE layers share with the training loop, once per iteration: the scale of the
// auxiliary losses' gradient (Megatron's MoEAuxLossAutoScaler.main_loss_backward_scale), the
// auxiliary losses to report (Megatron's aux-loss tracker: "load_balancing_loss", "z_loss") and,
// with --moe-router-enable-expert-bias, the tokens each router sent to each expert, by which
// the routers' expert biases are updated (Megatron's _update_router_expert_bias).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/nn/moe/config.h"

namespace mt {
class Backend;
}

namespace mt::nn {

struct Parameter;

// Megatron-DeepSpeed's name of its MoE layers' loss (with its coefficient, summed over them).
inline constexpr const char* kDeepSpeedMoeLoss = "moe loss";

// The router losses Megatron logs and backpropagates: those with a coefficient.
MT_API bool reports_load_balancing(const RouterConfig& router);
MT_API bool reports_z_loss(const RouterConfig& router);

class MT_API MoeTracker {
  public:
    // The losses `router` reports (each reported, 0 when no layer here adds to it) of a model of
    // `moe_layers` MoE layers in all (the report averages over them) among `layers` layers
    // (the decoder's and multi-token prediction's; --moe-per-layer-logging's indices).
    MoeTracker(const RouterConfig& router, int64_t moe_layers, int64_t layers);

    // The aux losses' gradient scale, set by the trainer before each iteration's backward passes
    // (the loss scale over the micro-batches and data-parallel ranks it sums gradients over).
    void set_grad_scale(double scale) { grad_scale_ = scale; }
    double grad_scale() const { return grad_scale_; }

    // Layer `layer`'s (0-based in the whole model) loss, divided by its coefficient, for one
    // micro-batch.
    void add(const std::string& name, int64_t layer, double value);
    // Each loss's sums over the micro-batches, per layer of the whole model (0 where no layer
    // of this model added), in the names' order; then clears. The trainer sums the pipeline
    // stages and averages the micro-batches; the report is each sum over the MoE layers
    // (Megatron's track_moe_metrics), and with --moe-per-layer-logging each layer's value.
    std::vector<std::pair<std::string, std::vector<double>>> take();
    int64_t moe_layers() const { return moe_layers_; }
    // What the report divides each loss's sum over the layers by: Megatron averages over the MoE
    // layers, Megatron-DeepSpeed sums them.
    int64_t report_layers() const { return sums_layers_ ? 1 : moe_layers_; }

    // --moe-router-enable-expert-bias: a router's bias buffer (f32, experts) joins the tracker;
    // returns the slot its counts go to.
    size_t add_expert_bias(Parameter& bias);
    // Adds a training forward's routing map (tokens x experts) to the slot's counts (Megatron's
    // local_tokens_per_expert; evaluation does not count).
    void count_routed(size_t slot, const std::vector<uint8_t>& map);
    // Every slot's counts of this iteration, one slot after another (experts each); empty
    // without expert bias.
    std::vector<double> routed_tokens() const;
    // Megatron's get_updated_expert_bias, `tokens` being routed_tokens() summed over the tensor-,
    // context- and data-parallel ranks: each bias += rate · sign(mean count - count), in f32;
    // then the counts restart.
    void update_expert_bias(Backend& backend, const std::vector<double>& tokens);

  private:
    struct ExpertBiasSlot {
        Parameter* bias;
        std::vector<double> tokens;
    };
    std::vector<std::pair<std::string, std::vector<double>>> sums_;  // per layer
    int64_t moe_layers_;
    bool sums_layers_;
    double grad_scale_ = 1.0;
    double bias_update_rate_;
    std::vector<ExpertBiasSlot> expert_bias_;
};

}  // namespace mt::nn
