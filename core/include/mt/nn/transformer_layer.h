// TransformerLayer: Megatron's layer as its spec lists it, each sublayer a residual branch.
// Pre-norm (Megatron's default):
//   h = h + dropout(sublayer(norm(h)))          for each sublayer in order
// or, with config.apply_residual_connection_post_layernorm (Megatron's legacy layers),
//   h = norm(h) + dropout(sublayer(norm(h))).
// With config.post_sublayer_norm (Gemma's sandwich) each sublayer's output is normed first:
//   h = h + dropout(post_norm(sublayer(norm(h)))).
// GPT and BERT: self-attention then the dense MLP; a hybrid model's layers hold one sublayer.
// Parameters sit under the layer's prefix in Megatron-core's names: a norm is the sublayer's
// fused one with Transformer Engine's names ("self_attention.linear_qkv.layer_norm_weight", the
// default) or a module of its own ("input_layernorm.weight", local spec), as config.norm_naming
// and the spec say.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/norm.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// A decoding step of continuous batching: each row's own layer states and positions filled.
struct LayerRows {
    std::span<InferenceState::LayerStates* const> states;
    std::span<const int64_t> pasts;
};

class MT_API TransformerLayer {
  public:
    // What one residual branch keeps for the backward.
    struct SublayerSaved {
        Norm::Saved norm;                     // the norm before the sublayer
        Norm::Saved post_norm;                // the norm after it (config.post_sublayer_norm)
        std::unique_ptr<ModuleState> module;  // none when recomputed (--recompute-modules mlp)
        Tensor module_input;                  // recomputed without recompute_norms: its input
        DropoutDraw dropout;                  // the hidden dropout after the sublayer
    };
    struct Saved {
        std::vector<SublayerSaved> sublayers;
    };

    // prefix: "decoder.layers.<i>".
    TransformerLayer(const std::string& prefix, const TransformerConfig& config,
                     const LayerSpec& spec, Backend& backend);

    // x (B, T, H) -> (B, T, H). Draws the sublayers' and hidden dropouts from ctx; saved may be
    // null (no backward). With `state` (inference: this layer's states, `past` positions in
    // them) the sublayers read and extend it. A decoder layer's cross-attention reads `encoder`.
    // With `rows` instead (continuous batching): row b of x is one new token of a request whose
    // layer states are rows.states[b], holding rows.pasts[b] positions.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                   const AttentionMask& mask = {}, InferenceState::LayerStates* state = nullptr,
                   int64_t past = 0, const EncoderContext* encoder = nullptr,
                   const LayerRows& rows = {}) const;
    // Whether every sublayer reads `rows` (Sublayer::decodes_rows).
    bool decodes_rows() const;
    // dy (B, T, H) -> dx (B, T, H); every parameter grad +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    // In Megatron-core's state-dict order (Transformer Engine or local norm placement).
    void collect_parameters(std::vector<Parameter*>& out);
    void collect_buffers(std::vector<Parameter*>& out);
    // Each sublayer's inference state for `batch` rows of up to `capacity` positions.
    InferenceState::LayerStates make_states(int64_t batch, int64_t capacity) const;

  private:
    struct Branch {
        Norm norm;
        std::unique_ptr<Sublayer> module;
        std::optional<Norm> post_norm;  // config.post_sublayer_norm
        bool norm_fused;  // Transformer Engine's parameter order: the norm inside the module
        bool recompute;   // --recompute-modules mlp applies
    };

    // a + b (a residual add) in a new tensor.
    Tensor sum(const Tensor& a, const Tensor& b) const;
    DropoutDraw draw_hidden_dropout(DropoutContext& ctx, int64_t numel) const;

    float hidden_dropout_;
    std::vector<Branch> branches_;
    Backend* backend_;
    TensorParallel tp_;
    bool residual_from_norm_;  // config.apply_residual_connection_post_layernorm
    bool recompute_norms_;     // selective recompute of the norms (TransformerConfig)
};

}  // namespace mt::nn
