#include "mt/nn/transformer_args.h"

#include "moe/deepspeed_moe_args.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/model_args_reader.h"
#include "mt/nn/mla_args.h"
#include "mt/nn/moe/args.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>

#include "mt/error.h"
#include "mt/log.h"

namespace mt::nn {

std::vector<FlagInfo> transformer_flags() {
    // A switch argparse stores as False under `dest`.
    auto store_false = [&](const char* name, const char* dest, const char* help) {
        FlagInfo f = switch_flag(name, help);
        f.store_false_dest = dest;
        return f;
    };
    std::vector<FlagInfo> flags{
        value_flag("num-layers", "number of transformer layers"),
        value_flag("hidden-size", "transformer hidden size"),
        value_flag("num-attention-heads", "number of attention heads"),
        value_flag("ffn-hidden-size",
                   "MLP hidden size (default 4 x hidden, or 2/3 of that with --swiglu)"),
        value_flag("kv-channels", "attention head dimension (default hidden / heads)"),
        value_flag("seq-length", "maximum sequence length to process"),
        value_flag("max-position-embeddings", "maximum number of position embeddings"),
        value_flag("position-embedding-type", "learned_absolute, rope, yarn or none",
                   "learned_absolute"),
        value_flag("yarn-original-max-position-embeddings",
                   "yarn: the context the rope was trained for", "4096"),
        value_flag("yarn-beta-fast", "yarn: the fast rotations' bound of the ramp", "32"),
        value_flag("yarn-beta-slow", "yarn: the slow rotations' bound of the ramp", "1"),
        switch_flag("yarn-correction-range-round-to-int",
                    "yarn: floor and ceil the ramp's bounds (the default)"),
        store_false("no-yarn-correction-range-round-to-int", "yarn_correction_range_round_to_int",
                    "yarn: keep the ramp's bounds fractional (Hugging Face's truncate false)"),
        [] {
            FlagInfo f = value_flag("fp8-format",
                                    "the transformer layers' linears in FP8: e4m3, or hybrid "
                                    "(E5M2 gradients); Transformer Engine's arithmetic emulated "
                                    "in f32");
            f.dest = "fp8";  // argparse's
            return f;
        }(),
        value_flag("fp8-recipe",
                   "how FP8 operands are scaled: tensorwise (each by its current amax), delayed "
                   "(by earlier amaxes), mxfp8 (each block of 32 by a power of two) or blockwise "
                   "(blocks of 128, weights in 128 x 128 tiles)",
                   "delayed"),
        value_flag("fp8-amax-history-len",
                   "delayed scaling: how many passes' amaxes each FP8 tensor remembers", "1"),
        value_flag("fp8-amax-compute-algo",
                   "delayed scaling: the amax a scale is made from, most_recent or max (the "
                   "history's largest)",
                   "most_recent"),
        value_flag("fp8-margin", "delayed scaling: scales divided by 2^margin", "0"),
        store_false("no-fp8-wgrad", "fp8_wgrad",
                    "delayed scaling: the weight-gradient GEMMs in the activations' precision"),
        switch_flag("first-last-layers-bf16", "keep the first and last layers out of FP8"),
        value_flag("num-layers-at-start-in-bf16",
                   "with --first-last-layers-bf16: how many first layers stay out of FP8", "1"),
        value_flag("num-layers-at-end-in-bf16",
                   "with --first-last-layers-bf16: how many last layers stay out of FP8", "1"),
        switch_flag("use-rotary-position-embeddings",
                    "deprecated in Megatron: --position-embedding-type rope, whatever that says"),
        value_flag("rotary-base", "base of the rotary embedding frequencies", "10000"),
        value_flag("rotary-percent",
                   "fraction of each head's dimensions that rotary embedding uses", "1.0"),
        value_flag("normalization", "LayerNorm or RMSNorm", "LayerNorm"),
        value_flag("norm-epsilon", "epsilon of the normalization layers", "1e-5"),
        switch_flag("apply-layernorm-1p",
                    "store the norm weights as gamma - 1 (zero-centered gamma)"),
        switch_flag("swiglu", "use SwiGLU in the MLP"),
        switch_flag("quick-geglu",
                    "a gated linear unit with quick GELU (x sigmoid(1.702 x)) in the MLP "
                    "(GPT-OSS's)"),
        value_flag("glu-linear-offset",
                   "added to a gated linear unit's linear half: act(gate) * (linear + offset)",
                   "0.0"),
        value_flag("activation-func-clamp-value",
                   "clamp fc1's output in a gated linear unit: the gate to at most this, the "
                   "linear half to within +-this (default none)"),
        switch_flag("group-query-attention", "use grouped-query attention"),
        value_flag("num-query-groups", "number of query groups with --group-query-attention", "1"),
        store_false("disable-bias-linear", "add_bias_linear", "no biases in the linear layers"),
        switch_flag("squared-relu", "squared ReLU in the MLP instead of GeLU"),
        store_false("no-bias-gelu-fusion", "bias_gelu_fusion",
                    "GeLU with erf (F.gelu) instead of the fused bias-GeLU's tanh form"),
        switch_flag("openai-gelu",
                    "legacy models only: Megatron-core's GPT ignores it, and so do we"),
        switch_flag("use-rope-scaling", "rescale the rotary frequencies as Llama 3.x does"),
        value_flag("rope-scaling-factor", "the Llama 3.x rope scaling factor", "8.0"),
        switch_flag("rotary-interleaved",
                    "rotate neighbouring pairs (x[2i], x[2i+1]) instead of halves"),
        value_flag("rotary-seq-len-interpolation-factor",
                   "divide the rotary positions by this (linear position interpolation)"),
        switch_flag("geglu",
                    "a gated MLP with the tanh GELU on the gate (Gemma's; megatron.cpp's flag for "
                    "Megatron-Bridge's gated_linear_unit with openai_gelu)"),
        switch_flag("post-sublayer-norm",
                    "a norm on each attention and MLP output before its residual add (Gemma's "
                    "sandwich norms; keys linear_proj.post_layernorm and linear_fc2.post_layernorm "
                    "as Megatron-Bridge's Gemma 3 layer spec names them)"),
        switch_flag("scale-embeddings",
                    "multiply the word embeddings by sqrt(--hidden-size) (Gemma's)"),
        value_flag("softmax-scale",
                   "the attention scores' scale (megatron-core's TransformerConfig.softmax_scale; "
                   "default 1/sqrt(--kv-channels))"),
        switch_flag("use-mup",
                    "(core_v0.19) maximal-update parametrization: hidden weights' init std and "
                    "Adam's lr and eps over the width multiplier (SGD: the vector-like "
                    "parameters' lr times it), embeddings and logits scaled, attention scores "
                    "1/d_head"),
        value_flag("mup-base-hidden-size",
                   "the base width the multiplier --hidden-size / this is taken from (default: "
                   "--hidden-size, multiplier 1)"),
        value_flag("mup-embedding-mult", "muP: the embeddings' multiplier", "1.0"),
        value_flag("mup-output-mult", "muP: the logits' multiplier (1.0: 1 / the width multiplier)",
                   "1.0"),
        value_flag("mup-base-head-dim",
                   "muP: the attention scores' scale is sqrt(this) / kv_channels^power (default: "
                   "1 / kv_channels^power)"),
        value_flag("mup-attn-scale-power", "muP: the power of kv_channels in the scores' scale",
                   "1.0"),
        switch_flag("qk-layernorm",
                    "normalise each head's queries and keys (--normalization's norm)"),
        switch_flag("qk-l2-norm",
                    "L2-normalise each head's queries and keys (Llama 4's L2Norm: RMS over the "
                    "head without a weight, eps 1e-6), in place of --qk-layernorm's norms"),
        switch_flag("add-qkv-bias", "a QKV bias even with --disable-bias-linear"),
        switch_flag("untie-embeddings-and-output-weights",
                    "separate input embedding and output weights"),
        switch_flag("apply-residual-connection-post-layernorm",
                    "each residual adds to its LayerNorm's output (the original BERT's order), "
                    "as Megatron's legacy models apply it; megatron-core's layers ignore it"),
        value_flag("attention-dropout", "dropout probability of the attention weights", "0.1"),
        value_flag("hidden-dropout", "dropout probability of the hidden states", "0.1"),
        value_flag("init-method-std", "standard deviation of the weight initialisation", "0.02"),
        value_flag("make-vocab-size-divisible-by", "pad the vocabulary to a multiple of this",
                   "128"),
        value_flag("padded-vocab-size",
                   "the model's vocabulary rows as given (core_v0.19), instead of the "
                   "tokenizer's vocabulary padded to --make-vocab-size-divisible-by x "
                   "--tensor-model-parallel-size; at least the tokenizer's size"),
        value_flag("transformer-impl",
                   "local or transformer_engine: the layer spec, which decides the parameter "
                   "names; core_v0.19's inference_optimized is transformer_engine's layers and "
                   "names with inference kernels",
                   "transformer_engine"),
        value_flag(
            "recompute-granularity",
            "full: recompute whole transformer layers in the backward (with --recompute-method); "
            "selective: the --recompute-modules"),
        value_flag(
            "recompute-method",
            "with full granularity: uniform (every layer, in chunks of --recompute-num-layers) "
            "or block (the first --recompute-num-layers layers)"),
        value_flag("recompute-num-layers",
                   "layers per recompute chunk (uniform) or recomputed (block)"),
        [&] {
            FlagInfo f =
                value_flag("recompute-modules",
                           "selective granularity: the submodules to recompute (core_attn, the "
                           "default; mlp; layernorm)");
            f.multiple = true;
            return f;
        }(),
        switch_flag("recompute-activations", "the same as --recompute-granularity selective"),
        switch_flag(
            "checkpoint-activations",
            "no longer valid (Megatron): use --recompute-activations or --recompute-granularity"),
    };
    std::vector<FlagInfo> moe = moe_flags();
    flags.insert(flags.end(), moe.begin(), moe.end());
    std::vector<FlagInfo> deepspeed_moe = deepspeed_moe_flags();
    flags.insert(flags.end(), deepspeed_moe.begin(), deepspeed_moe.end());
    std::vector<FlagInfo> mla = mla_flags();
    flags.insert(flags.end(), mla.begin(), mla.end());
    std::vector<FlagInfo> windows = attention_window_flags();
    flags.insert(flags.end(), windows.begin(), windows.end());
    flags.push_back(value_flag("softmax-type",
                               "attention softmax: vanilla, off-by-one (a sink logit of 0 in "
                               "every row) or learnable (a learned sink per head, "
                               "core_attention.softmax_offset)",
                               "vanilla"));
    flags.push_back(value_flag("mtp-num-layers",
                               "multi-token prediction: the depths of future tokens predicted, "
                               "one transformer layer each (GPT; default none)"));
    flags.push_back(value_flag("mtp-loss-scaling-factor",
                               "multi-token prediction: the weight of the depths' mean loss in "
                               "the loss trained",
                               "0.1"));
    return flags;
}

int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel) {
    MT_CHECK(vocab_size > 0, "vocabulary size must be positive, got ", vocab_size);
    MT_CHECK(divisible_by > 0 && tensor_parallel > 0, "--make-vocab-size-divisible-by (",
             divisible_by, ") and --tensor-model-parallel-size (", tensor_parallel,
             ") must be positive");
    // Token ids are int32: a table beyond that (or sizes whose product would wrap) is an error.
    constexpr int64_t kMostRows = std::numeric_limits<int32_t>::max();
    int64_t multiple = 0;
    MT_CHECK(!__builtin_mul_overflow(divisible_by, tensor_parallel, &multiple) &&
                 multiple <= kMostRows && vocab_size <= kMostRows,
             "a vocabulary of ", vocab_size, " padded to a multiple of ", divisible_by, " x ",
             tensor_parallel, " is beyond ", kMostRows, " rows (token ids are int32)");
    const int64_t padded = (vocab_size + multiple - 1) / multiple * multiple;
    MT_CHECK(padded <= kMostRows, "the vocabulary padded to ", padded, " rows is beyond ",
             kMostRows, " (token ids are int32)");
    return padded;
}

namespace {

// megatron/training/argument_utils.py's _apply_yarn_config_from_args: YarnRotaryEmbedding's
// settings from the flags, its defaults where they are not given (--mscale-all-dim 0, core_v0.19's
// default, not multi-latent attention's 1.0 of core_v0.13: the flag has no default text).
void read_yarn_args(const ModelArgsReader& f, TransformerArgs& c) {
    YarnArgs& y = c.yarn;
    y.scaling_factor = f.real("rotary-scaling-factor", 1.0);
    y.original_max_positions = f.integer("yarn-original-max-position-embeddings", 4096);
    y.beta_fast = f.real("yarn-beta-fast", 32);
    y.beta_slow = f.real("yarn-beta-slow", 1);
    y.mscale = f.real("mscale", 1.0);
    y.mscale_all_dim = f.real("mscale-all-dim", 0.0);
    y.round_to_int = !f.flag("no-yarn-correction-range-round-to-int");
    MT_CHECK(
        y.scaling_factor > 0 && y.original_max_positions > 0 && y.beta_fast > 0 && y.beta_slow > 0,
        "--position-embedding-type yarn: --rotary-scaling-factor (", y.scaling_factor,
        "), --yarn-original-max-position-embeddings (", y.original_max_positions,
        ") and the betas (", y.beta_fast, ", ", y.beta_slow, ") must be positive");
    // YarnRotaryEmbedding rotates the whole head (its frequencies are over kv_channels) and
    // refuses pairs.
    MT_CHECK(c.rotary_percent == 1.0,
             "not supported yet: --position-embedding-type yarn with --rotary-percent ",
             c.rotary_percent, " (megatron-core's YaRN rotates whole heads)");
    MT_CHECK(!c.rotary_interleaved, "Yarn RoPE does not support interleaved rotary embeddings");
    MT_CHECK(!c.use_rope_scaling && c.rotary_seq_len_interpolation_factor == 0,
             "not supported yet: --position-embedding-type yarn with --use-rope-scaling or "
             "--rotary-seq-len-interpolation-factor");
}

}  // namespace

namespace {

// --fp8-format, its recipe and the layers kept in bf16 (read first: a recipe not emulated is
// refused before anything else).
void read_fp8_args(const ModelArgsReader& f, TransformerArgs& c) {
    // argparse's choices (core_v0.19 adds custom to the recipes), checked with or without
    // --fp8-format.
    const std::string recipe = f.has("fp8-recipe") ? f.text("fp8-recipe") : "delayed";
    MT_CHECK(recipe == "tensorwise" || recipe == "delayed" || recipe == "mxfp8" ||
                 recipe == "blockwise" || recipe == "custom",
             "--fp8-recipe ", recipe.substr(0, 100),
             ": invalid choice (choose from 'tensorwise', 'delayed', 'mxfp8', 'blockwise', "
             "'custom')");
    const bool amax_max = f.choice("fp8-amax-compute-algo", "most_recent",
                                   {std::pair{"most_recent", false}, std::pair{"max", true}});
    if (!f.has("fp8-format")) return;
    c.fp8.config.hybrid = f.choice("fp8-format", "hybrid",
                                   {std::pair{"hybrid", true}, std::pair{"e4m3", false}});
    MT_CHECK(recipe != "custom",
             "--fp8-recipe custom: not supported yet: FP8 with a custom "
             "recipe (a quantizer factory)");
    c.fp8.config.enabled = true;
    c.fp8.config.recipe = recipe == "delayed"     ? Fp8Recipe::delayed
                          : recipe == "mxfp8"     ? Fp8Recipe::mxfp8
                          : recipe == "blockwise" ? Fp8Recipe::blockwise
                                                  : Fp8Recipe::tensorwise;
    // Megatron hands --no-fp8-wgrad to the delayed recipe alone (override_linear_precision).
    c.fp8.config.wgrad_fp8 = c.fp8.config.recipe != Fp8Recipe::delayed || !f.flag("no-fp8-wgrad");
    c.fp8.delayed_recipe.amax_history_len = f.integer("fp8-amax-history-len", 1);
    c.fp8.delayed_recipe.amax_max = amax_max;
    c.fp8.delayed_recipe.margin = f.integer("fp8-margin", 0);
    MT_CHECK(c.fp8.delayed_recipe.amax_history_len >= 1,
             "--fp8-amax-history-len must be positive, got ",
             c.fp8.delayed_recipe.amax_history_len);
    if (f.flag("first-last-layers-bf16")) {
        c.fp8.bf16_layers_at_start = f.integer("num-layers-at-start-in-bf16", 1);
        c.fp8.bf16_layers_at_end = f.integer("num-layers-at-end-in-bf16", 1);
        MT_CHECK(c.fp8.bf16_layers_at_start >= 0 && c.fp8.bf16_layers_at_end >= 0,
                 "--num-layers-at-start-in-bf16 and --num-layers-at-end-in-bf16 must not be "
                 "negative");
    }
}

// What the rest of the flags make of FP8, once they are read: Megatron's TransformerConfig
// checks, its local layers (which Transformer Engine's autocast does not reach), and the layers
// FP8 does not reach here yet (refused).
void settle_fp8(const ModelArgsReader& f, TransformerArgs& c) {
    if (!c.fp8.config.enabled) return;
    if (c.transformer_impl == TransformerImpl::local) {
        static std::once_flag said;
        std::call_once(said, [] {
            log::warn(
                "--fp8-format with --transformer-impl local: no GEMM runs in FP8, as in "
                "Megatron, whose local layers are not Transformer Engine's");
        });
        c.fp8.config.enabled = false;
        return;
    }
    const int64_t per_stage = c.num_layers / f.integer("pipeline-model-parallel-size", 1);
    for (const auto& [flag, n] :
         {std::pair{"num-layers-at-start-in-bf16", c.fp8.bf16_layers_at_start},
          std::pair{"num-layers-at-end-in-bf16", c.fp8.bf16_layers_at_end}})
        MT_CHECK(n <= per_stage, "--", flag, " (", n,
                 ") must be between 0 and number of layers per pipeline stage (", per_stage, ")");
    MT_CHECK(!recompute_module(c.recompute, "layernorm") && !recompute_module(c.recompute, "moe_act"),
             "moe_act and layernorm recompute cannot work with fp8.");
    if (c.fp8.config.recipe == Fp8Recipe::delayed) {
        // fp8_utils.get_fp8_context's assertion.
        MT_CHECK(c.fp8.bf16_layers_at_start == 0 && c.fp8.bf16_layers_at_end == 0,
                 "Delayed scaling does not support first / last layer in BF16.");
        MT_CHECK(c.recompute.granularity != "full" && !recompute_module(c.recompute, "mlp"),
                 "--fp8-recipe delayed with --recompute-granularity ", c.recompute.granularity,
                 ": not supported yet: FP8's delayed scaling with recomputed linears (Transformer "
                 "Engine replays the forward's scales)");
    }
    MT_CHECK(!c.moe.enabled(),
             "--fp8-format with --num-experts: not supported yet: FP8 in MoE models (the "
             "experts' grouped GEMMs)");
    MT_CHECK(!c.mla.enabled,
             "--fp8-format with --multi-latent-attention: not supported yet: FP8 with multi-latent "
             "attention");
    MT_CHECK(c.mtp_num_layers == 0,
             "--fp8-format with --mtp-num-layers: not supported yet: FP8 with multi-token "
             "prediction");
}

}  // namespace

TransformerArgs read_transformer_args(const ModelArgs& args) {
    ModelArgsReader f(args);
    TransformerArgs c;
    c.num_layers = f.integer("num-layers");
    c.hidden_size = f.integer("hidden-size");
    c.num_attention_heads = f.integer("num-attention-heads");
    c.max_position_embeddings = f.integer("max-position-embeddings");
    c.seq_length = f.integer("seq-length", c.max_position_embeddings);
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_attention_heads > 0,
             "--num-layers, --hidden-size and --num-attention-heads must be positive");
    MT_CHECK(c.seq_length > 0, "--seq-length must be positive, got ", c.seq_length);
    read_fp8_args(f, c);
    MT_CHECK(c.max_position_embeddings >= c.seq_length, "--max-position-embeddings (",
             c.max_position_embeddings, ") must be >= --seq-length (", c.seq_length, ")");

    c.swiglu = f.flag("swiglu");
    c.ffn_hidden_size =
        f.integer("ffn-hidden-size", c.swiglu ? int64_t(double(4 * c.hidden_size) * 2 / 3 / 64) * 64
                                              : 4 * c.hidden_size);
    MT_CHECK(c.ffn_hidden_size > 0, "--ffn-hidden-size ", c.ffn_hidden_size,
             ": must be positive (the --swiglu default int(4h * 2/3 / 64) * 64 is 0 for "
             "--hidden-size < 24)");
    if (f.has("kv-channels")) {
        c.kv_channels = f.integer("kv-channels");
    } else {
        MT_CHECK(c.hidden_size % c.num_attention_heads == 0, "--hidden-size (", c.hidden_size,
                 ") must be divisible by --num-attention-heads (", c.num_attention_heads,
                 ") unless --kv-channels is given");
        c.kv_channels = c.hidden_size / c.num_attention_heads;
    }
    MT_CHECK(c.kv_channels > 0, "--kv-channels must be positive, got ", c.kv_channels);
    c.num_query_groups =
        f.flag("group-query-attention") ? f.integer("num-query-groups", 1) : c.num_attention_heads;
    MT_CHECK(c.num_query_groups > 0 && c.num_attention_heads % c.num_query_groups == 0,
             "--num-attention-heads (", c.num_attention_heads,
             ") must be divisible by --num-query-groups (", c.num_query_groups, ")");

    // validate_args turns the legacy --use-rotary-position-embeddings into rope, over any
    // --position-embedding-type.
    const std::string pos = f.flag("use-rotary-position-embeddings") ? std::string("rope")
                            : f.has("position-embedding-type") ? f.text("position-embedding-type")
                                                               : std::string("learned_absolute");
    if (pos == "learned_absolute")
        c.position_embedding = PositionEmbedding::learned_absolute;
    else if (pos == "rope")
        c.position_embedding = PositionEmbedding::rope;
    else if (pos == "yarn")
        c.position_embedding = PositionEmbedding::yarn;
    else if (pos == "none")
        c.position_embedding = PositionEmbedding::none;
    else if (pos == "relative")  // megatron-core's T5Model reads it itself (its own tables)
        MT_FAIL(
            "--position-embedding-type relative: only T5 models have relative position "
            "embeddings in Megatron (--model t5)");
    else
        MT_FAIL("--position-embedding-type ", pos,
                ": supported are learned_absolute, rope, yarn, none");
    c.rotary_base = f.real("rotary-base", 10000);
    c.rotary_percent = f.real("rotary-percent", 1.0);
    MT_CHECK(c.rotary_percent > 0 && c.rotary_percent <= 1, "--rotary-percent ", c.rotary_percent,
             ": must be in (0, 1]");
    MT_CHECK(c.rotary_base > 0, "--rotary-base must be positive, got ", c.rotary_base);
    c.use_rope_scaling = f.flag("use-rope-scaling");
    c.rope_scaling_factor = f.real("rope-scaling-factor", 8.0);
    MT_CHECK(c.rope_scaling_factor > 0, "--rope-scaling-factor must be positive, got ",
             c.rope_scaling_factor);
    c.rotary_interleaved = f.flag("rotary-interleaved");
    if (f.has("rotary-seq-len-interpolation-factor")) {
        c.rotary_seq_len_interpolation_factor =
            double(f.integer("rotary-seq-len-interpolation-factor"));
        MT_CHECK(c.rotary_seq_len_interpolation_factor > 0,
                 "--rotary-seq-len-interpolation-factor must be positive, got ",
                 c.rotary_seq_len_interpolation_factor);
    }
    if (c.position_embedding == PositionEmbedding::yarn) read_yarn_args(f, c);

    const std::string norm = f.has("normalization") ? f.text("normalization") : "LayerNorm";
    if (norm == "LayerNorm")
        c.normalization = Normalization::layer_norm;
    else if (norm == "RMSNorm")
        c.normalization = Normalization::rms_norm;
    else
        MT_FAIL("--normalization ", norm, ": supported are LayerNorm and RMSNorm");
    c.norm_epsilon = f.real("norm-epsilon", 1e-5);
    c.apply_layernorm_1p = f.flag("apply-layernorm-1p");

    c.qk_layernorm = f.flag("qk-layernorm");
    c.qk_l2_norm = f.flag("qk-l2-norm");
    c.squared_relu = f.flag("squared-relu");
    MT_CHECK(!(c.squared_relu && c.swiglu), "--squared-relu and --swiglu exclude each other");
    // Megatron reads --squared-relu before --quick-geglu, which it then ignores.
    c.quick_geglu = f.flag("quick-geglu") && !c.squared_relu;
    MT_CHECK(!(c.quick_geglu && c.swiglu), "--quick-geglu and --swiglu exclude each other");
    c.geglu = f.flag("geglu");
    MT_CHECK(!c.geglu || !(c.swiglu || c.quick_geglu || c.squared_relu),
             "--geglu excludes --swiglu, --quick-geglu and --squared-relu");
    c.post_sublayer_norm = f.flag("post-sublayer-norm");
    c.scale_embeddings = f.flag("scale-embeddings");
    if (f.has("softmax-scale") && f.text("softmax-scale") != "None") {
        c.softmax_scale = f.real("softmax-scale", 0);
        MT_CHECK(c.softmax_scale > 0 && std::isfinite(c.softmax_scale),
                 "--softmax-scale must be positive, got ", c.softmax_scale);
    }
    if (f.flag("use-mup")) {
        // TransformerConfig.__post_init__'s muP block.
        const int64_t base =
            f.has("mup-base-hidden-size") && f.text("mup-base-hidden-size") != "None"
                ? f.integer("mup-base-hidden-size")
                : c.hidden_size;
        MT_CHECK(base > 0, "--mup-base-hidden-size must be positive.");
        c.mup.enabled = true;
        c.mup.width_mult = double(c.hidden_size) / double(base);
        if (c.softmax_scale == 0) {
            const double base_head =
                f.has("mup-base-head-dim") && f.text("mup-base-head-dim") != "None"
                    ? std::sqrt(f.real("mup-base-head-dim", 0))
                    : 1.0;
            c.softmax_scale =
                base_head / std::pow(double(c.kv_channels), f.real("mup-attn-scale-power", 1.0));
        }
        c.mup.embedding_mult = f.real("mup-embedding-mult", 1.0);
        c.mup.output_mult = f.real("mup-output-mult", 1.0);
        if (c.mup.output_mult == 1.0 && c.mup.width_mult != 1.0)
            c.mup.output_mult = 1.0 / c.mup.width_mult;
    }
    c.glu_linear_offset = f.real("glu-linear-offset", 0.0);
    if (f.has("activation-func-clamp-value")) {
        c.activation_clamp = f.real("activation-func-clamp-value", 0.0);
        // TransformerConfig's checks for SwiGLU; quick GeGLU takes any value.
        MT_CHECK(!c.swiglu || (std::isfinite(c.activation_clamp) && c.activation_clamp > 0),
                 "--activation-func-clamp-value for SwiGLU must be finite and greater than zero, "
                 "got ",
                 c.activation_clamp);
        MT_CHECK(!c.swiglu || c.glu_linear_offset == 0,
                 "--glu-linear-offset must be zero when --activation-func-clamp-value is set for "
                 "SwiGLU");
    }
    // Megatron turns the bias-GeLU fusion (tanh GeLU) off without biases: F.gelu (erf) then.
    c.add_bias_linear = !f.flag("disable-bias-linear");
    c.bias_gelu_fusion = c.add_bias_linear && !f.flag("no-bias-gelu-fusion");
    c.add_qkv_bias = c.add_bias_linear || f.flag("add-qkv-bias");
    c.untie_embeddings_and_output_weights = f.flag("untie-embeddings-and-output-weights");
    c.apply_residual_connection_post_layernorm = f.flag("apply-residual-connection-post-layernorm");
    if (c.apply_residual_connection_post_layernorm) {
        static std::once_flag said;
        std::call_once(said, [] {
            log::warn(
                "--apply-residual-connection-post-layernorm: each residual adds to its "
                "LayerNorm's output, as Megatron's legacy models (core_v0.13 "
                "--use-legacy-models) compute it; megatron-core's own layers ignore the "
                "flag");
        });
    }
    c.attention_dropout = f.real("attention-dropout", 0.1);
    c.hidden_dropout = f.real("hidden-dropout", 0.1);
    MT_CHECK(c.attention_dropout >= 0 && c.attention_dropout < 1 && c.hidden_dropout >= 0 &&
                 c.hidden_dropout < 1,
             "--attention-dropout (", c.attention_dropout, ") and --hidden-dropout (",
             c.hidden_dropout, ") must be in [0, 1)");
    c.init_method_std = f.real("init-method-std", 0.02);

    const std::string impl =
        f.has("transformer-impl") ? f.text("transformer-impl") : "transformer_engine";
    // (inference_optimized: the same norms fused into the same linears under the same state
    // dict keys as Transformer Engine's spec, with FlashInfer's GPU kernels.)
    if (impl == "transformer_engine" || impl == "inference_optimized")
        c.transformer_impl = TransformerImpl::transformer_engine;
    else if (impl == "local")
        c.transformer_impl = TransformerImpl::local;
    else
        MT_FAIL("--transformer-impl ", impl,
                ": supported are local, transformer_engine and inference_optimized");

    MT_CHECK(!f.flag("checkpoint-activations"),
             "--checkpoint-activations is no longer valid, use --recompute-activations, or, for "
             "more control, --recompute-granularity and --recompute-method.");
    if (f.has("recompute-granularity")) c.recompute.granularity = f.text("recompute-granularity");
    if (f.flag("recompute-activations")) c.recompute.granularity = "selective";
    if (f.has("recompute-method")) c.recompute.method = f.text("recompute-method");
    c.recompute.num_layers = f.integer("recompute-num-layers", 0);
    if (f.has("recompute-modules")) {
        std::istringstream words(f.text("recompute-modules"));
        for (std::string m; words >> m;) c.recompute.modules.push_back(m);
    }
    recompute_segments(c.recompute, c.num_layers);  // Megatron's checks, now
    read_moe_args(f, c);
    MT_CHECK(!c.swiglu || std::isinf(c.activation_clamp) || c.moe.enabled(),
             "--activation-func-clamp-value for SwiGLU is only supported with MoE (--num-experts)");
    // Megatron's local spec builds the legacy GroupedMLP, whose experts are two fused tensors
    // (weight1 [H, E·2F], weight2 [E·F, H]); ours carry Transformer Engine's per-expert names.
    MT_CHECK(!c.moe.grouped_gemm || c.transformer_impl == TransformerImpl::transformer_engine,
             "not supported yet: --moe-grouped-gemm with --transformer-impl local (the legacy "
             "GroupedMLP's fused weight1/weight2 layout); use the Transformer Engine names (the "
             "default) or leave --moe-grouped-gemm out");

    read_mla_args(f, c);
    c.windows = read_attention_windows(args, c.num_layers);
    c.softmax_type = f.choice("softmax-type", "vanilla",
                              {std::pair{"vanilla", SoftmaxType::vanilla},
                               std::pair{"off-by-one", SoftmaxType::off_by_one},
                               std::pair{"learnable", SoftmaxType::learnable}});
    MT_CHECK(c.softmax_type == SoftmaxType::vanilla || !c.mla.enabled,
             "not supported yet: --softmax-type ", f.text("softmax-type"),
             " with --multi-latent-attention");
    MT_CHECK(!c.windows.enabled() || !c.mla.enabled,
             "not supported yet: --window-size with --multi-latent-attention");
    MT_CHECK(c.softmax_scale == 0 || !c.mla.enabled,
             "not supported yet: --softmax-scale with --multi-latent-attention (its scale is "
             "YaRN's)");
    MT_CHECK(!c.post_sublayer_norm || !c.add_bias_linear,
             "not supported yet: --post-sublayer-norm with linear biases (Megatron-Bridge adds "
             "the output biases after the norm); add --disable-bias-linear");
    MT_CHECK(c.windows.local_rope_base == 0 || c.position_embedding == PositionEmbedding::rope,
             "--rotary-base-local needs --position-embedding-type rope");

    // Megatron reads --mtp-num-layers as "if args.mtp_num_layers": 0 is none.
    c.mtp_num_layers = f.integer("mtp-num-layers", 0);
    c.mtp_loss_scaling_factor = f.real("mtp-loss-scaling-factor", 0.1);
    MT_CHECK(c.mtp_num_layers >= 0, "--mtp-num-layers must not be negative, got ",
             c.mtp_num_layers);
    MT_CHECK(c.mtp_num_layers == 0 || c.position_embedding != PositionEmbedding::learned_absolute,
             "--mtp-num-layers: Megatron's multi-token prediction takes --position-embedding-type "
             "rope or none, not learned_absolute");

    settle_fp8(f, c);

    c.tensor_model_parallel_size = f.integer("tensor-model-parallel-size", 1);
    MT_CHECK(c.tensor_model_parallel_size > 0,
             "--tensor-model-parallel-size must be positive, got ", c.tensor_model_parallel_size);
    MT_CHECK(c.num_attention_heads % c.tensor_model_parallel_size == 0 &&
                 c.num_query_groups % c.tensor_model_parallel_size == 0,
             "--num-attention-heads (", c.num_attention_heads, ") and the query groups (",
             c.num_query_groups, ") must be divisible by --tensor-model-parallel-size (",
             c.tensor_model_parallel_size, ")");
    if (f.has("padded-vocab-size")) {
        c.padded_vocab_size = f.integer("padded-vocab-size");
        c.vocab_size = f.integer("vocab-size", c.padded_vocab_size);
        MT_CHECK(c.vocab_size > 0, "the vocabulary size must be positive, got ", c.vocab_size);
    } else {
        c.vocab_size = f.integer("vocab-size");
        c.padded_vocab_size =
            padded_vocab_size(c.vocab_size, f.integer("make-vocab-size-divisible-by", 128),
                              c.tensor_model_parallel_size);
    }
    MT_CHECK(c.padded_vocab_size >= c.vocab_size, "padded vocabulary (", c.padded_vocab_size,
             ") smaller than the vocabulary (", c.vocab_size, ")");
    return c;
}

TransformerConfig transformer_layer_config(const TransformerArgs& c, DType dtype,
                                           const TensorParallel& tp, const ContextParallel& cp) {
    TransformerConfig t;
    t.cp = cp;
    t.hidden_size = c.hidden_size;
    t.ffn_hidden_size = c.ffn_hidden_size;
    t.num_attention_heads = c.num_attention_heads;
    t.num_query_groups = c.num_query_groups;
    t.kv_channels = c.kv_channels;
    t.normalization =
        c.normalization == Normalization::rms_norm ? NormKind::rms_norm : NormKind::layer_norm;
    t.norm = ops::NormConfig{float(c.norm_epsilon), c.apply_layernorm_1p};
    // Megatron: --swiglu is silu on fc1's [gate | up], --squared-relu relu(x)^2; otherwise GeLU,
    // fused with the bias in its tanh form (bias_gelu) unless the fusion is off (no biases, or
    // --no-bias-gelu-fusion), when it is F.gelu (erf).
    t.gated_linear_unit = c.swiglu || c.quick_geglu || c.geglu;
    t.activation = c.swiglu                        ? ops::UnaryOp::silu
                   : c.squared_relu                ? ops::UnaryOp::squared_relu
                   : c.quick_geglu                 ? ops::UnaryOp::quick_gelu
                   : c.bias_gelu_fusion || c.geglu ? ops::UnaryOp::gelu
                                                   : ops::UnaryOp::gelu_erf;
    t.glu_linear_offset = float(c.glu_linear_offset);
    t.activation_clamp = float(c.activation_clamp);
    t.add_bias_linear = c.add_bias_linear;
    t.add_qkv_bias = c.add_qkv_bias;
    t.rotary = c.position_embedding == PositionEmbedding::rope ||
               c.position_embedding == PositionEmbedding::yarn;
    if (c.position_embedding == PositionEmbedding::yarn) {
        t.rope.yarn_scaling_factor = c.yarn.scaling_factor;
        t.rope.yarn_original_max_positions = c.yarn.original_max_positions;
        t.rope.yarn_beta_fast = c.yarn.beta_fast;
        t.rope.yarn_beta_slow = c.yarn.beta_slow;
        t.rope.yarn_round_to_int = c.yarn.round_to_int;
        t.rope.table_scale =
            ops::yarn_concentration(c.yarn.scaling_factor, c.yarn.mscale, c.yarn.mscale_all_dim);
    }
    t.rotary_percent = float(c.rotary_percent);
    t.rope.base = c.rotary_base;
    t.rope.llama3_scaling_factor = c.use_rope_scaling ? c.rope_scaling_factor : 0;
    t.rope.seq_len_interpolation_factor = c.rotary_seq_len_interpolation_factor;
    t.rope.interleaved = c.rotary_interleaved;
    t.qk_layernorm = c.qk_layernorm;
    t.qk_l2_norm = c.qk_l2_norm;
    t.softmax_type = c.softmax_type;
    t.apply_residual_connection_post_layernorm = c.apply_residual_connection_post_layernorm;
    t.post_sublayer_norm = c.post_sublayer_norm;
    t.softmax_scale = c.softmax_scale;
    t.hidden_dropout = float(c.hidden_dropout);
    t.attention_dropout = float(c.attention_dropout);
    t.dtype = dtype;
    t.norm_naming = c.transformer_impl == TransformerImpl::local ? NormNaming::local
                                                                 : NormNaming::transformer_engine;
    t.tp = tp;
    t.recompute_mlp = recompute_module(c.recompute, "mlp");
    t.recompute_norms = recompute_module(c.recompute, "layernorm");
    t.recompute_mla_up_proj = recompute_module(c.recompute, "mla_up_proj");
    t.recompute_moe_act = recompute_module(c.recompute, "moe_act");
    t.moe = c.moe;
    t.mla = c.mla;
    return t;
}

ModelArgs resolved_transformer_args(const ModelArgs& args, const TransformerArgs& c) {
    ModelArgs out = args;
    out["ffn-hidden-size"] = std::to_string(c.ffn_hidden_size);
    out["kv-channels"] = std::to_string(c.kv_channels);
    out["seq-length"] = std::to_string(c.seq_length);
    out["padded-vocab-size"] = std::to_string(c.padded_vocab_size);
    // Megatron keeps --num-query-groups as given unless --group-query-attention uses it.
    if (args.count("group-query-attention"))
        out["num-query-groups"] = std::to_string(c.num_query_groups);
    // Megatron fills in each expert's FFN size.
    if (c.moe.enabled()) {
        out["moe-ffn-hidden-size"] = std::to_string(c.moe.ffn_hidden_size);
        // Megatron-DeepSpeed's args keep --num-experts as argparse's list (nargs='+').
        if (c.moe.router.gshard.enabled)
            out["num-experts"] = int_list_text(deepspeed_expert_counts(args.at("num-experts")));
        // A pattern as the list Megatron's moe_freq_type evaluates it to (checkpoints keep that).
        if (auto it = args.find("moe-layer-freq");
            it != args.end() && it->second.find('[') != std::string::npos) {
            std::vector<int64_t> flags;
            for (bool moe : c.moe_layers.moe) flags.push_back(moe ? 1 : 0);
            out["moe-layer-freq"] = int_list_text(flags);
        }
    }
    // --mscale-all-dim's default depends on the model (mla_flags): the args keep the value used.
    if (c.mla.enabled || c.position_embedding == PositionEmbedding::yarn) {
        std::ostringstream v;
        v.precision(17);
        v << (c.mla.enabled ? c.mla.mscale_all_dim : c.yarn.mscale_all_dim);
        out["mscale-all-dim"] = v.str();
    }
    return out;
}

}  // namespace mt::nn
