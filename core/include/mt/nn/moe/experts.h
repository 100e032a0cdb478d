// The experts of a MoE layer on this rank: Megatron-core's SequentialMLP (or, with
// --moe-grouped-gemm, Transformer Engine's TEGroupedMLP, the same math under other names), each
// expert an MLP fc1 -> activation -> × routing prob -> fc2 over its rows of the dispatched
// tokens. The prob weighs the activation (MLP.forward's per_token_scale in Megatron-core v0.13),
// so the combine afterwards only sums. Both projections of all local experts go through one
// Backend::grouped_gemm_nt each (on the CPU a single pass when the experts get few tokens, as in
// decoding). Under expert tensor parallelism each expert's fc1 holds its
// columns and fc2 its rows, and the outputs are partial sums the dispatcher reduces.
//
// With --add-bias-linear (core_v0.19's GPT-OSS experts) fc1 adds its bias before the activation
// and fc2's bias is weighed by the prob as the activation is (p · (fc2(a) + b), Megatron's
// _apply_bias).
//
// Parameters, for global expert e (this rank's j-th: e = ep_rank · local + j):
//   SequentialMLP  <prefix>.experts.local_experts.<e>.linear_fc1.weight (F or 2F, H),
//   [.linear_fc1.bias (F or 2F)], .linear_fc2.weight (H, F), [.linear_fc2.bias (H)]
//   TEGroupedMLP   <prefix>.experts.linear_fc1.weight<e> [, .bias<e>], then
//   <prefix>.experts.linear_fc2.weight<e> [, .bias<e>]
// Checkpoints of expert-parallel runs number each rank's experts from 0 (their writer's job).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

class MT_API MoeExperts {
  public:
    struct Saved {
        Tensor x;      // (M, H): the dispatched tokens
        Tensor probs;  // (M): their routing probs
        Tensor h;      // (M, F1): fc1's outputs, the activation's input
        Tensor a;      // (M, F): the activation before the probs weigh it (none: recomputed)
        std::vector<int64_t> rows;  // per local expert
    };
    struct Grads {
        Tensor dx;      // (M, H)
        Tensor dprobs;  // (M)
    };

    // prefix: the MoE layer's ("decoder.layers.3.mlp"); sizes from config.moe.
    MoeExperts(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (M, H) holds rows[j] tokens for local expert j, in order; probs (M) in the router's dtype
    // (f32; f64 for an f64 model). Returns (M, H).
    Tensor forward(const Tensor& x, const std::vector<int64_t>& rows, const Tensor& probs,
                   Saved* saved) const;
    // dy (M, H) -> dx and dprobs (partial sums under expert tensor parallelism); grads +=.
    Grads backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    int64_t num_local() const { return int64_t(fc1_.size()); }

  private:
    // The activation (or gated linear unit) of fc1's outputs h (M, F1): (M, F).
    Tensor activation(const Tensor& h) const;
    // Expert j's slice of a (M, ...) tensor.
    Tensor rows_of(const Tensor& t, const std::vector<int64_t>& rows, size_t j) const;
    // t's rows each times its prob, in t's dtype.
    Tensor weighted_rows(const Tensor& t, const Tensor& probs) const;
    // `bias` on each of n rows, in `dtype`, each times its prob unless probs is undefined.
    Tensor bias_rows(const Tensor& bias, int64_t n, DType dtype, const Tensor& probs) const;

    bool gated_;
    bool probs_on_input_;        // --moe-apply-probs-on-input
    bool grouped_;               // Transformer Engine's GroupedLinear names and order
    bool recompute_activation_;  // --recompute-modules moe_act
    ops::UnaryOp activation_;    // without a gated linear unit
    ops::GluConfig glu_;         // with one
    std::vector<Parameter> fc1_, fc2_;
    std::vector<Parameter> fc1_bias_, fc2_bias_;  // empty without --add-bias-linear
    // Whether this rank adds fc2's bias: over expert tensor parallelism each rank's fc2 output
    // is a partial sum, so one rank of the group adds it (all compute its gradient, the same).
    bool adds_fc2_bias_ = true;
    Backend* backend_;
};

}  // namespace mt::nn
