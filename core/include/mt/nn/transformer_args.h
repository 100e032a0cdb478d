// The transformer model flags every family reads (--num-layers, --hidden-size, ..., the MoE
// flags), with Megatron's defaults, derived values (ffn size, kv channels, query groups, padded
// vocabulary) and checks, as megatron/training/arguments.py computes them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/nn/attention_window.h"
#include "mt/nn/fp8_config.h"
#include "mt/nn/moe/layer_pattern.h"
#include "mt/nn/recompute.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

enum class PositionEmbedding { learned_absolute, rope, yarn, none };

// --position-embedding-type yarn (core_v0.19's YarnRotaryEmbedding for GPT, GPT-OSS's rope):
// Megatron's flags and defaults (--rotary-scaling-factor, --mscale and --mscale-all-dim are
// multi-latent attention's flags, read for it too).
struct YarnArgs {
    double scaling_factor = 1.0;            // --rotary-scaling-factor
    int64_t original_max_positions = 4096;  // --yarn-original-max-position-embeddings
    double beta_fast = 32, beta_slow = 1;   // --yarn-beta-fast, --yarn-beta-slow
    double mscale = 1.0, mscale_all_dim = 0.0;
    bool round_to_int = true;  // --no-yarn-correction-range-round-to-int clears it
};
enum class Normalization { layer_norm, rms_norm };
// --transformer-impl: decides the parameter names (Transformer Engine fuses each layer's norms
// into the following linear); the math is the same.
enum class TransformerImpl { transformer_engine, local };

// What the flags say, for GPT, BERT and the attention and MLP layers of a hybrid model.
struct TransformerArgs {
    int64_t num_layers = 0, hidden_size = 0, num_attention_heads = 0;
    int64_t ffn_hidden_size = 0;   // default 4h, or int(4h·2/3 / 64)·64 with --swiglu
    int64_t kv_channels = 0;       // head dim; default h / heads
    int64_t num_query_groups = 0;  // = heads unless --group-query-attention
    int64_t seq_length = 0, max_position_embeddings = 0;
    PositionEmbedding position_embedding = PositionEmbedding::learned_absolute;
    double rotary_base = 10000, rotary_percent = 1.0;
    bool use_rope_scaling = false;                   // --use-rope-scaling (Llama 3.x)
    double rope_scaling_factor = 8.0;                // --rope-scaling-factor
    bool rotary_interleaved = false;                 // --rotary-interleaved
    double rotary_seq_len_interpolation_factor = 0;  // 0: None
    YarnArgs yarn;                                   // with --position-embedding-type yarn
    bool qk_layernorm = false;                       // --qk-layernorm
    bool qk_l2_norm = false;                         // --qk-l2-norm
    Normalization normalization = Normalization::layer_norm;
    double norm_epsilon = 1e-5;
    bool apply_layernorm_1p = false;
    bool swiglu = false;
    bool squared_relu = false;  // --squared-relu
    bool quick_geglu = false;   // --quick-geglu (not with --squared-relu, which Megatron prefers)
    // Gemma's layers (megatron.cpp's flags for what Megatron-Bridge's Gemma 3 provider sets):
    bool geglu = false;               // --geglu: the gated tanh GELU
    bool post_sublayer_norm = false;  // --post-sublayer-norm: a norm on each sublayer's output
    bool scale_embeddings = false;    // --scale-embeddings: the embeddings times sqrt(hidden)
    double softmax_scale = 0;         // --softmax-scale (TransformerConfig's); 0: 1/sqrt(head dim)
    // core_v0.19's muP (--use-mup): the width multiplier --hidden-size / --mup-base-hidden-size,
    // which divides the hidden weights' init std by its square root (the optimizer's overrides:
    // mt/optim/optimizer.h), the embeddings' multiplier (--mup-embedding-mult) and the logits'
    // (--mup-output-mult, 1 / width by default); 1 each without muP.
    struct Mup {
        bool enabled = false;
        double width_mult = 1.0, embedding_mult = 1.0, output_mult = 1.0;
    } mup;
    double glu_linear_offset = 0;  // --glu-linear-offset
    // --activation-func-clamp-value; infinity: none.
    double activation_clamp = std::numeric_limits<double>::infinity();
    bool bias_gelu_fusion = true;  // the tanh GeLU; false: erf (--no-bias-gelu-fusion, no biases)
    bool add_bias_linear = true, add_qkv_bias = true;
    bool untie_embeddings_and_output_weights = false;
    bool apply_residual_connection_post_layernorm = false;
    double attention_dropout = 0.1, hidden_dropout = 0.1;
    double init_method_std = 0.02;
    int64_t vocab_size = 0;         // the tokenizer's
    int64_t padded_vocab_size = 0;  // padded to --make-vocab-size-divisible-by · TP
    int64_t tensor_model_parallel_size = 1;
    TransformerImpl transformer_impl = TransformerImpl::transformer_engine;
    RecomputeConfig recompute;  // --recompute-*
    // --num-experts and the --moe-* flags (moe.enabled(): a mixture-of-experts model), without
    // its process groups; the layers --moe-layer-freq makes MoE layers.
    MoeConfig moe;
    MoeLayerPattern moe_layers;
    MlaConfig mla;                                    // --multi-latent-attention and its sizes
    AttentionWindows windows;                         // --window-size, --window-attn-skip-freq
    SoftmaxType softmax_type = SoftmaxType::vanilla;  // --softmax-type
    // --mtp-num-layers (0: none): the multi-token prediction depths after the decoder (GPT), and
    // --mtp-loss-scaling-factor, their mean loss's weight in the loss trained.
    int64_t mtp_num_layers = 0;
    double mtp_loss_scaling_factor = 0.1;
    Fp8Args fp8;  // --fp8-format, --fp8-recipe, --first-last-layers-bf16
};

// Megatron's _vocab_size_with_padding.
MT_API int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel);

// The model flags read_transformer_args reads, with Megatron's help texts and defaults.
MT_API std::vector<FlagInfo> transformer_flags();

// Reads flags without their leading "--" ("num-layers" -> "2"). Booleans are present with an
// empty value or "true". Needs "vocab-size" (the tokenizer's) or "padded-vocab-size".
// Throws mt::Error naming the flag for anything missing, malformed or inconsistent.
MT_API TransformerArgs read_transformer_args(const ModelArgs& args);

// `args` with the values Megatron derives from them (FFN size, head dimension, sequence length,
// padded vocabulary; the query groups when --group-query-attention uses them), as flag text.
MT_API ModelArgs resolved_transformer_args(const ModelArgs& args, const TransformerArgs& config);

// One transformer layer's settings as Megatron's TransformerConfig derives them from the flags
// (activation, norms, rope, dropout, recompute modules, parameter names), for `dtype` over `tp`
// (and `cp`). BERT's encoder layers are built from the same flags.
MT_API TransformerConfig transformer_layer_config(const TransformerArgs& config, DType dtype,
                                                  const TensorParallel& tp,
                                                  const ContextParallel& cp = {});

}  // namespace mt::nn
