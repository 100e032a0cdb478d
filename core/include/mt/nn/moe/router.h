// TopKRouter: Megatron-core's MoE router module. Its weight "<prefix>.router.weight" (experts, H)
// and, with --add-bias-linear (core_v0.19), its bias "<prefix>.router.bias" (experts) give each
// token's logits, which are routed on the host (routing.h) in Megatron's
// sequence-major token order. The backward turns the probs' gradient, and the auxiliary losses'
// (scaled as MoEAuxLossAutoScaler does), into the input's and the weight's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/dropout.h"
#include "mt/nn/moe/routing.h"
#include "mt/nn/parameter.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

class MT_API TopKRouter {
  public:
    struct Saved {
        Tensor x;                    // (N, H) in the logits' dtype: the gating GEMM's input
        std::vector<double> logits;  // (N, experts), sequence-major
        Routing routing;             // sequence-major
        int64_t batch = 0, seq = 0;
    };

    // prefix: the MoE layer's ("decoder.layers.3.mlp").
    TopKRouter(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, T, H) (T: this rank's part of the sequence) -> the routing of its B·T tokens in
    // (b, t) order (its probs, map, counts and losses; the backward's fields stay in `saved`).
    // `training`: the auxiliary losses are computed (and sinkhorn balances). `noise`: the
    // counters DeepSpeed's gate (config.gshard) draws its tokens x experts random numbers from
    // (not applied: none).
    Routing forward(const Tensor& x, bool training, Saved* saved,
                    const DropoutDraw& noise = {}) const;
    // dprobs (B·T x experts, (b, t) order) -> dx (B, T, H) in x's dtype; weight.grad +=.
    // aux_scale: the auxiliary losses' gradient scale.
    Tensor backward(const std::vector<double>& dprobs, const Saved& saved, double aux_scale);

    void collect_parameters(std::vector<Parameter*>& out) {
        out.push_back(&weight_);
        if (bias_.value.defined()) out.push_back(&bias_);
    }
    // --moe-router-enable-expert-bias: the buffer "<prefix>.router.expert_bias" (f32, experts,
    // zeros at first) the MoeTracker updates; null without it.
    Parameter* expert_bias() { return config_.expert_bias ? &expert_bias_ : nullptr; }

  private:
    RouterConfig config_;
    DType logits_dtype_;  // --moe-router-dtype, else the model's
    Parameter weight_;
    Parameter bias_;  // undefined without --add-bias-linear
    Parameter expert_bias_;
    Communicator* sequence_partition_;  // tp (sequence parallel) and cp, or null
    Backend* backend_;
};

}  // namespace mt::nn
