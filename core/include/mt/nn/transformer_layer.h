// TransformerLayer: Megatron's pre-norm transformer layer,
//   h = x + dropout(mixer(input_layernorm(x)))
//   y = h + dropout(feed_forward(pre_mlp_layernorm(h)))
// or, with config.post_layer_norm, the original BERT's post-norm one,
//   h = norm1(x + dropout(mixer(x))),  y = norm2(h + dropout(feed_forward(h))),
// with its token mixer and feed-forward block made by a LayerSpec (GPT and BERT: self-attention
// and the dense MLP) and parameters under the layer's prefix in Megatron-core's names: the norms
// are linear_qkv.layer_norm_* and linear_fc1.layer_norm_* (Transformer Engine, the default), or
// input_layernorm.* and pre_mlp_layernorm.* (local spec), as config.norm_naming says.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/norm.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

class MT_API TransformerLayer {
  public:
    struct Saved {
        Norm::Saved input_norm;  // post-norm: the norm after the mixer's residual add
        std::unique_ptr<ModuleState> mixer;
        DropoutDraw mixer_dropout;  // hidden dropout after the mixer
        Norm::Saved pre_mlp_norm;   // post-norm: the norm after the feed-forward residual add
        std::unique_ptr<ModuleState> feed_forward;  // none with recompute_mlp
        Tensor feed_forward_input;         // recompute_mlp without recompute_norms: its input
        DropoutDraw feed_forward_dropout;  // hidden dropout after the feed-forward block
    };

    // prefix: "decoder.layers.<i>".
    TransformerLayer(const std::string& prefix, const TransformerConfig& config,
                     const LayerSpec& spec, Backend& backend);

    // x (B, T, H) -> (B, T, H). Draws the mixer's and hidden dropouts from ctx; saved may be
    // null (inference). mask and cache: see TokenMixer::forward.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                   const AttentionMask& mask = {}, const KvSlot& cache = {}) const;
    // dy (B, T, H) -> dx (B, T, H); every parameter grad +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    // In Megatron-core's state-dict order (Transformer Engine or local norm placement).
    void collect_parameters(std::vector<Parameter*>& out);
    void collect_buffers(std::vector<Parameter*>& out) { feed_forward_->collect_buffers(out); }

  private:
    // a + b (a residual add) in a new tensor.
    Tensor sum(const Tensor& a, const Tensor& b) const;
    Tensor forward_post_norm(const Tensor& x, DropoutContext& ctx, Saved* saved,
                             const AttentionMask& mask, const KvSlot& cache) const;
    Tensor backward_post_norm(const Tensor& dy, const Saved& saved);

    float hidden_dropout_;
    Norm input_norm_;
    std::unique_ptr<TokenMixer> mixer_;
    Norm pre_mlp_norm_;
    std::unique_ptr<FeedForward> feed_forward_;
    Backend* backend_;
    TensorParallel tp_;
    bool te_order_;                         // Transformer Engine's parameter order
    bool mlp_norm_fused_;                   // ... with the second norm inside the MLP
    bool post_norm_;                        // config.post_layer_norm
    bool recompute_mlp_, recompute_norms_;  // selective recompute (TransformerConfig)
};

}  // namespace mt::nn
