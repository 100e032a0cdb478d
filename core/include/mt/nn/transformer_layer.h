// TransformerLayer: Megatron's pre-norm GPT layer,
//   h = x + dropout(attention(input_layernorm(x))),  y = h + dropout(mlp(pre_mlp_layernorm(h)))
// with parameters under "decoder.layers.<i>." in Megatron-core's names: the norms are
// linear_qkv.layer_norm_* and linear_fc1.layer_norm_* (Transformer Engine, the default), or
// input_layernorm.* and pre_mlp_layernorm.* (local spec), as config.norm_naming says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention.h"
#include "mt/nn/dropout.h"
#include "mt/nn/mlp.h"
#include "mt/nn/norm.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

class MT_API TransformerLayer {
  public:
    struct Saved {
        Norm::Saved input_norm;
        SelfAttention::Saved attention;
        DropoutDraw attention_dropout;  // hidden dropout after the attention
        Norm::Saved pre_mlp_norm;
        Mlp::Saved mlp;           // empty with recompute_mlp
        Tensor mlp_input;         // recompute_mlp without recompute_norms: the MLP's input
        DropoutDraw mlp_dropout;  // hidden dropout after the MLP
    };

    // prefix: "decoder.layers.<i>".
    TransformerLayer(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, T, H) -> (B, T, H). Draws the attention and hidden dropouts from ctx; saved may be
    // null (inference). mask and cache: see SelfAttention::forward.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                   const AttentionMask& mask = {}, const KvSlot& cache = {}) const;
    // dy (B, T, H) -> dx (B, T, H); every parameter grad +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    Norm& input_layernorm() { return input_norm_; }
    SelfAttention& self_attention() { return attention_; }
    Norm& pre_mlp_layernorm() { return pre_mlp_norm_; }
    Mlp& mlp() { return mlp_; }

  private:
    // a + b (a residual add) in a new tensor.
    Tensor sum(const Tensor& a, const Tensor& b) const;

    float hidden_dropout_;
    Norm input_norm_;
    SelfAttention attention_;
    Norm pre_mlp_norm_;
    Mlp mlp_;
    Backend* backend_;
    TensorParallel tp_;
    bool recompute_mlp_, recompute_norms_;  // selective recompute (TransformerConfig)
};

}  // namespace mt::nn
