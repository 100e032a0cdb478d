// What a transformer layer is made of, as Megatron's ModuleSpec / TransformerLayerSubmodules say
// it: a token mixer (self-attention; later Mamba or cross-attention) and a feed-forward block
// (the dense MLP; later a mixture of experts), chosen by the model family's spec. The layer wires
// them with its norms, residual adds and hidden dropouts, whatever they are.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/norm.h"
#include "mt/nn/parameter.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// What a module's forward keeps for its backward; each module defines its own.
struct ModuleState {
    virtual ~ModuleState() = default;
};

class MT_API TokenMixer {
  public:
    virtual ~TokenMixer() = default;
    // x (B, T, H) -> (B, T, H), attending as `mask` says (`cache`: inference). With `saved`,
    // keeps what backward needs, without x itself when keep_input is false (selective
    // recompute rebuilds the norm's output instead).
    virtual Tensor forward(const Tensor& x, DropoutContext& ctx,
                           std::unique_ptr<ModuleState>* saved, bool keep_input,
                           const AttentionMask& mask, const KvSlot& cache) const = 0;
    // dy -> dx, every parameter grad +=; `input` is the forward's x when it was not kept.
    virtual Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) = 0;
    // Its parameters in Megatron-core's state-dict order, with `fused_norm` (the layer's norm
    // that Transformer Engine fuses into the module's first linear; null otherwise) where that
    // puts it.
    virtual void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) = 0;
};

class MT_API FeedForward {
  public:
    virtual ~FeedForward() = default;
    // x (B, T, H) -> (B, T, H); keep_input as TokenMixer's. ctx: whether the pass trains (a MoE
    // router balances and jitters its input then) and the stream its noise draws from.
    virtual Tensor forward(const Tensor& x, DropoutContext& ctx,
                           std::unique_ptr<ModuleState>* saved, bool keep_input) const = 0;
    virtual Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) = 0;
    virtual void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) = 0;
    // Its persistent buffers (Model::buffers): a MoE router's expert bias.
    virtual void collect_buffers(std::vector<Parameter*>& out) { (void)out; }
};

// Builds a layer's modules under its prefix ("decoder.layers.3").
struct LayerSpec {
    std::function<std::unique_ptr<TokenMixer>(const std::string& prefix, const TransformerConfig&,
                                              Backend&)>
        mixer;
    std::function<std::unique_ptr<FeedForward>(const std::string& prefix, const TransformerConfig&,
                                               Backend&)>
        feed_forward;
    // Whether Transformer Engine's names fuse the layer's second norm into the feed-forward block
    // ("mlp.linear_fc1.layer_norm_weight"); a MoE layer keeps "pre_mlp_layernorm" whatever the
    // naming.
    bool norm_fused_into_feed_forward = true;
};

// Each layer's spec by its index in the whole model.
using LayerSpecs = std::function<LayerSpec(int64_t layer)>;

// The layer of GPT and BERT: self-attention ("<prefix>.self_attention") and the dense MLP
// ("<prefix>.mlp").
MT_API LayerSpec dense_layer_spec();
// Every layer dense.
MT_API LayerSpecs dense_layer_specs();

}  // namespace mt::nn
