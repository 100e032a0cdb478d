// MLP: Megatron's GPT feed-forward block, linear_fc1 -> activation (GeLU, or a gated linear
// unit, SwiGLU or quick GeGLU, on fc1's [gate | up] halves) -> linear_fc2, with parameters
// "<prefix>.linear_fc1.*" and
// "<prefix>.linear_fc2.*".
#pragma once

#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/linear.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

class MT_API Mlp {
  public:
    struct Saved {
        Linear::Saved fc1;
        Tensor fc1_out;  // (..., F) or (..., 2F) gated: the activation's input
        Linear::Saved fc2;
    };

    // fc1 (F or 2F, H) column-parallel (gated: gate/up halves split group-wise, 2 groups),
    // fc2 (H, F) row-parallel; biases when config.add_bias_linear.
    Mlp(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, T, H) -> (B, T, H).
    Tensor forward(const Tensor& x, Saved* saved) const;
    // dy (B, T, H) -> dx (B, T, H); fc1/fc2 grads +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    Linear& fc1() { return fc1_; }
    Linear& fc2() { return fc2_; }

  private:
    bool gated_;
    ops::UnaryOp activation_;  // without a gated linear unit
    ops::GluConfig glu_;       // with one
    Linear fc1_, fc2_;
    Backend* backend_;
};

}  // namespace mt::nn
