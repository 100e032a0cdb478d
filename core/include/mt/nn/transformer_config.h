// TransformerConfig: the hyper-parameters of one GPT transformer layer, named after Megatron's
// TransformerConfig fields and flags (--hidden-size, --ffn-hidden-size, --num-attention-heads,
// --group-query-attention/--num-query-groups, --swiglu, --normalization, ...).
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/nn/context_parallel.h"
#include "mt/nn/fp8_config.h"
#include "mt/nn/mamba_config.h"
#include "mt/nn/mla_config.h"
#include "mt/nn/moe/config.h"
#include "mt/nn/norm.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/op_types.h"

namespace mt::nn {

// Where a layer's two norms are named (Megatron's --transformer-impl): Transformer Engine fuses
// them into the following linear ("self_attention.linear_qkv.layer_norm_weight",
// "mlp.linear_fc1.layer_norm_weight"); the local spec keeps separate modules
// ("input_layernorm.weight", "pre_mlp_layernorm.weight").
enum class NormNaming : uint8_t { transformer_engine, local };

// --softmax-type (core_v0.19): the attention softmax as is, with a sink logit of 0 in every
// row (off-by-one), or with a learned sink per head (learnable: GPT-OSS's attention sinks, the
// parameter "self_attention.core_attention.softmax_offset").
enum class SoftmaxType : uint8_t { vanilla, off_by_one, learnable };

struct TransformerConfig {
    int64_t hidden_size = 0;
    int64_t ffn_hidden_size = 0;  // required (the flag defaults to 4 * hidden_size)
    int64_t num_attention_heads = 0;
    int64_t num_query_groups = 0;  // 0: num_attention_heads (multi-head attention)
    int64_t kv_channels = 0;       // head dim; 0: hidden_size / num_attention_heads
    NormKind normalization = NormKind::layer_norm;
    ops::NormConfig norm;                          // --layernorm-epsilon, --apply-layernorm-1p
    ops::UnaryOp activation = ops::UnaryOp::gelu;  // gelu is the tanh form (bias_gelu)
    // --swiglu (silu) or --quick-geglu (quick_gelu): fc1 gives [gate | linear], `activation` the
    // gate's, with --glu-linear-offset and --activation-func-clamp-value.
    bool gated_linear_unit = false;
    float glu_linear_offset = 0.0f;
    float activation_clamp = std::numeric_limits<float>::infinity();
    bool add_bias_linear = true;  // --disable-bias-linear clears it
    bool add_qkv_bias = false;    // --add-qkv-bias (qkv bias also when add_bias_linear)
    bool rotary = false;          // --position-embedding-type rope
    float rotary_percent = 1.0f;  // --rotary-percent
    // --rotary-base, --use-rope-scaling/--rope-scaling-factor, --rotary-interleaved,
    // --rotary-seq-len-interpolation-factor (rotary_dim is set from the head dim and percent).
    ops::RopeConfig rope;
    bool qk_layernorm = false;  // --qk-layernorm: queries and keys normalised per head
    // --qk-l2-norm: normalised per head by their RMS alone (Megatron's L2Norm, no parameters),
    // in place of --qk-layernorm's norms.
    bool qk_l2_norm = false;
    float hidden_dropout = 0.1f;
    float attention_dropout = 0.1f;
    // Selective recompute (--recompute-modules): the MLP's internals, and the norms' outputs
    // (the inputs the QKV and fc1 linears keep), rebuilt in the backward instead of kept.
    bool recompute_mlp = false, recompute_norms = false;
    // --recompute-modules mla_up_proj: multi-latent attention's up-projections and rope rebuilt
    // in the backward instead of keeping their outputs.
    bool recompute_mla_up_proj = false;
    // --recompute-modules moe_act: the MoE experts' activations rebuilt from fc1's outputs in
    // the backward instead of kept.
    bool recompute_moe_act = false;
    // --apply-residual-connection-post-layernorm (Megatron's legacy layers): each residual
    // branch adds to its norm's output instead of its input. With the norms shifted by one
    // (the embedding norm as layer 0's first, each layer's last as the next one's first, the
    // last as the final norm) this is the original post-LayerNorm BERT.
    bool apply_residual_connection_post_layernorm = false;
    // --post-sublayer-norm (Gemma's sandwich): a norm on each sublayer's output, before the
    // hidden dropout and the residual add (SublayerSpec::post_norm names it).
    bool post_sublayer_norm = false;
    // --softmax-scale: the attention scores' scale; 0: 1/sqrt(head dim).
    double softmax_scale = 0;
    int64_t attention_block = 64;  // queries and keys per block of the online softmax
    // This layer's sliding window (--window-size (window, 0) on the layers
    // --window-attn-skip-freq leaves windowed): each query sees the `window` keys before it and
    // itself; -1: every earlier key.
    int64_t attention_window = -1;
    SoftmaxType softmax_type = SoftmaxType::vanilla;
    DType dtype = DType::f32;
    NormNaming norm_naming = NormNaming::transformer_engine;
    // The tensor-parallel group the layer's linears are split over (heads and FFN columns),
    // and whether activations outside them are sequence shards.
    TensorParallel tp;
    // The context-parallel group the sequence is split over (attention runs as a ring).
    ContextParallel cp;
    // The mixture of experts a MoE layer's feed-forward block is (the layer spec decides which
    // layers are MoE layers).
    MoeConfig moe;
    MambaConfig mamba;  // the Mamba mixers of a hybrid model
    MlaConfig mla;      // --multi-latent-attention: the self-attention of every layer
    Fp8Config fp8;      // --fp8-format: this layer's linears in FP8

    int64_t query_groups() const {
        return num_query_groups > 0 ? num_query_groups : num_attention_heads;
    }
    int64_t head_dim() const {
        return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads;
    }
    // The gated linear unit of the MLPs (with gated_linear_unit).
    ops::GluConfig glu() const { return {activation, glu_linear_offset, activation_clamp}; }
};

// Beyond the dense layers (Megatron's num_floating_point_operations): how many of the layers
// are MoE layers (c.moe's expert sizes), and the multi-token prediction depths, each counted as
// one more layer (MoE when mtp_moe: the decoder's last layer is) with its norms, eh_proj and one
// more pass through the output layer.
struct FlopsLayers {
    int64_t moe = 0;
    int64_t mtp = 0;
    bool mtp_moe = false;
};

// Floating-point operations of one training iteration over `samples` sequences of a transformer
// of `num_layers` such layers with an output layer of `padded_vocab` (forward and backward), by
// Megatron's formula (training.py num_floating_point_operations, which every model family
// reports).
MT_API double megatron_training_flops(const TransformerConfig& layer, int64_t num_layers,
                                      int64_t seq_length, int64_t padded_vocab, int64_t samples,
                                      const FlopsLayers& extra = {});

}  // namespace mt::nn
