#include "t5_config.h"

#include <string>

#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::t5 {

namespace {

// validate_args' pairing of a flag with its encoder twin (--num-layers / --encoder-num-layers,
// --seq-length / --encoder-seq-length): the one given fills the other. A checkpoint's args hold
// both, equal.
void pair_with_encoder_flag(ModelArgs& args, const char* flag, const char* encoder_flag) {
    const auto it = args.find(flag), enc = args.find(encoder_flag);
    if (it != args.end() && enc != args.end()) {
        MT_CHECK(it->second == enc->second, "--", flag, " ", it->second, " and --", encoder_flag,
                 " ", enc->second, " contradict each other (Megatron takes one of them)");
    } else if (enc != args.end()) {
        args[flag] = enc->second;
    } else {
        MT_CHECK(it != args.end(), "T5 needs --", encoder_flag, " (or --", flag, ")");
        args[encoder_flag] = it->second;
    }
}

ModelArgs paired(const ModelArgs& args) {
    ModelArgs out = args;
    pair_with_encoder_flag(out, "num-layers", "encoder-num-layers");
    pair_with_encoder_flag(out, "seq-length", "encoder-seq-length");
    return out;
}

}  // namespace

std::vector<FlagInfo> t5_flags() {
    std::vector<FlagInfo> flags = nn::transformer_flags();
    flags.push_back(value_flag("encoder-num-layers", "the encoder's layers (or --num-layers)"));
    flags.push_back(value_flag("decoder-num-layers",
                               "the decoder's layers (default: the "
                               "encoder's)"));
    flags.push_back(
        value_flag("encoder-seq-length", "the encoder's sequence length (or --seq-length)"));
    flags.push_back(value_flag("decoder-seq-length", "the decoder's sequence length"));
    flags.push_back(value_flag("relative-attention-num-buckets",
                               "buckets of the relative position embeddings", "32"));
    flags.push_back(value_flag("relative-attention-max-distance",
                               "the distance the relative position buckets reach", "128"));
    return flags;
}

T5Config t5_config_from_args(const ModelArgs& given) {
    const ModelArgs args = paired(given);
    const ModelArgsReader f(args);
    T5Config c;
    // Relative position embeddings are T5's own: the shared reader sees no position embedding.
    const bool relative = !f.flag("use-rotary-position-embeddings") &&
                          f.has("position-embedding-type") &&
                          f.text("position-embedding-type") == "relative";
    ModelArgs shared = args;
    if (relative) shared["position-embedding-type"] = "none";
    c.transformer = nn::read_transformer_args(shared);
    MT_CHECK(!c.transformer.windows.enabled(), "not supported yet: --window-size in T5");
    MT_CHECK(!c.transformer.fp8.config.enabled, "--fp8-format: not supported yet: FP8 in T5");
    MT_CHECK(c.transformer.softmax_type == nn::SoftmaxType::vanilla,
             "not supported yet: --softmax-type in T5");
    const nn::TransformerArgs& t = c.transformer;
    if (relative) {
        MT_CHECK(t.transformer_impl == nn::TransformerImpl::transformer_engine,
                 "--position-embedding-type relative needs --transformer-impl "
                 "transformer_engine (Megatron: the local implementation does not support "
                 "attention bias-based position embeddings)");
        c.relative = nn::RelativePositionBuckets{f.integer("relative-attention-num-buckets", 32),
                                                 f.integer("relative-attention-max-distance", 128)};
    }
    MT_CHECK(!t.moe.enabled(), "not supported yet: --num-experts for T5");
    MT_CHECK(!t.mla.enabled, "not supported yet: --multi-latent-attention for T5");
    MT_CHECK(t.mtp_num_layers == 0, "not supported yet: --mtp-num-layers for T5");
    // pretrain_t5.py hands T5Model --rotary-percent alone: its RotaryEmbedding keeps the
    // default base (10000) and no scaling, whatever --rotary-base or --use-rope-scaling say.
    c.transformer.rotary_base = 10000;
    c.transformer.use_rope_scaling = false;
    c.transformer.rotary_seq_len_interpolation_factor = 0;
    MT_CHECK(!t.apply_residual_connection_post_layernorm,
             "not supported yet: --apply-residual-connection-post-layernorm for T5");
    MT_CHECK(!t.scale_embeddings,
             "not supported yet: --scale-embeddings for T5 (Gemma's embedding scale is built for "
             "GPT models)");
    c.encoder_layers = t.num_layers;
    c.decoder_layers = f.integer("decoder-num-layers", t.num_layers);
    MT_CHECK(c.decoder_layers > 0, "--decoder-num-layers must be positive, got ", c.decoder_layers);
    c.encoder_seq_length = t.seq_length;
    c.decoder_seq_length = f.integer("decoder-seq-length", 0);
    MT_CHECK(c.decoder_seq_length >= 0, "--decoder-seq-length must be positive, got ",
             c.decoder_seq_length);
    MT_CHECK(t.position_embedding != nn::PositionEmbedding::learned_absolute ||
                 c.decoder_seq_length <= t.max_position_embeddings,
             "--decoder-seq-length (", c.decoder_seq_length,
             ") must be <= --max-position-embeddings (", t.max_position_embeddings,
             "): the decoder's positions share the embedding table");
    return c;
}

ModelArgs t5_resolved_args(const ModelArgs& args) {
    const T5Config c = t5_config_from_args(args);
    ModelArgs out = nn::resolved_transformer_args(paired(args), c.transformer);
    out["decoder-num-layers"] = std::to_string(c.decoder_layers);
    return out;
}

}  // namespace mt::plugins::t5
