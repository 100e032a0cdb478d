// What a layer is made of, as Megatron's ModuleSpecs say it: an ordered list of residual
// sublayers, each behind a norm (self-attention and the dense MLP for GPT and BERT; a mixture of
// experts; a Mamba mixer; an attention-only or MLP-only layer of a hybrid model). The layer
// (TransformerLayer) wires each with its norm, hidden dropout and residual add, whatever it is.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/encoder_context.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/norm.h"
#include "mt/nn/parameter.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// What a module's forward keeps for its backward; each module defines its own.
struct ModuleState {
    virtual ~ModuleState() = default;
};

// What a sublayer reads besides its input: the attention mask (training and scoring) or, in
// inference, its own state and the number of positions already in it; a decoder's the encoder.
struct SublayerContext {
    const AttentionMask& mask;
    SublayerState* state = nullptr;  // null: no inference state (training, scoring)
    int64_t past = 0;
    const EncoderContext* encoder = nullptr;  // null: no encoder (GPT, BERT, an encoder)
    // A step of continuous batching (state null): row b of x holds new tokens of its own request,
    // whose state is rows[b], holding row_pasts[b] positions; empty otherwise.
    std::span<SublayerState* const> rows = {};
    std::span<const int64_t> row_pasts = {};
};

class MT_API Sublayer {
  public:
    virtual ~Sublayer() = default;
    // x (B, T, H) -> (B, T, H). ctx: whether the pass trains and the stream its noise draws
    // from. With `saved`, keeps what backward needs, without x itself when keep_input is false
    // (selective recompute rebuilds the norm's output instead).
    virtual Tensor forward(const Tensor& x, DropoutContext& ctx,
                           std::unique_ptr<ModuleState>* saved, bool keep_input,
                           const SublayerContext& in) const = 0;
    // dy -> dx, every parameter grad +=; `input` is the forward's x when it was not kept.
    virtual Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) = 0;
    // Its parameters in Megatron-core's state-dict order, with `fused_norm` (the layer's norm
    // that Transformer Engine fuses into the module's first linear; null otherwise) where that
    // puts it.
    virtual void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) = 0;
    // Its persistent buffers (Model::buffers): a MoE router's expert bias.
    virtual void collect_buffers(std::vector<Parameter*>& out) { (void)out; }
    // Its inference state for `batch` rows of up to `capacity` positions (attention: keys and
    // values); null for a sublayer that keeps none (an MLP).
    virtual std::unique_ptr<SublayerState> make_state(int64_t batch, int64_t capacity) const {
        (void)batch;
        (void)capacity;
        return nullptr;
    }
    // Whether forward reads SublayerContext::rows: tokens of rows whose states hold different
    // numbers of positions (continuous batching). A sublayer that keeps no state and treats
    // each token alone needs nothing for it.
    virtual bool decodes_rows() const = 0;
};

// Continuous batching for a sublayer whose state has no per-row positions of its own (a Mamba
// mixer, multi-latent attention): row b of x through `one` alone, with its state rows[b] at
// row_pasts[b], the outputs stacked (each row gets what it gets in a batch of its own).
MT_API Tensor
each_row(const Tensor& x, const SublayerContext& in, Backend& backend,
         const std::function<Tensor(const Tensor& row, SublayerState* state, int64_t past)>& one);

// One sublayer of a layer spec: how to build it under the layer's prefix ("decoder.layers.3")
// and the names of the norm before it.
struct SublayerSpec {
    std::function<std::unique_ptr<Sublayer>(const std::string& prefix, const TransformerConfig&,
                                            Backend&)>
        build;
    // The norm's module with Transformer Engine's names, fused into the sublayer's first linear
    // ("self_attention.linear_qkv": "...linear_qkv.layer_norm_weight"); empty where it stays a
    // module of its own whatever the naming (a MoE block's "pre_mlp_layernorm").
    std::string fused_norm;
    std::string norm;  // its module otherwise ("input_layernorm")
    // With --post-sublayer-norm, the norm on its output ("self_attention.linear_proj.
    // post_layernorm"); empty where the sublayer has none.
    std::string post_norm;
    // Whether --recompute-modules mlp recomputes it.
    bool is_mlp = false;
};

// A layer's sublayers in order.
struct LayerSpec {
    std::vector<SublayerSpec> sublayers;
};

// Each layer's spec by its index in the whole model.
using LayerSpecs = std::function<LayerSpec(int64_t layer)>;

// Self-attention ("<prefix>.self_attention") behind input_layernorm.
MT_API SublayerSpec self_attention_sublayer();
// Multi-latent attention ("<prefix>.self_attention", MLASelfAttention, behind input_layernorm,
// a module of its own in both namings) with `multi_latent`, else self-attention.
MT_API SublayerSpec attention_sublayer(bool multi_latent);
// The dense MLP ("<prefix>.mlp") behind pre_mlp_layernorm.
MT_API SublayerSpec dense_mlp_sublayer();
// Cross-attention ("<prefix>.cross_attention") behind pre_cross_attn_layernorm, a module of its
// own in both namings (Transformer Engine's spec has TENorm there, not a fused linear).
MT_API SublayerSpec cross_attention_sublayer();
// The layer of GPT and BERT: self-attention (multi-latent with `multi_latent`), then the dense
// MLP.
MT_API LayerSpec dense_layer_spec(bool multi_latent = false);
// Every layer dense.
MT_API LayerSpecs dense_layer_specs(bool multi_latent = false);

}  // namespace mt::nn
