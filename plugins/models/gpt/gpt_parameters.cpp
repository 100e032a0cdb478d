#include "gpt_parameters.h"

#include <string>

namespace mt::plugins::gpt {

namespace {

using Kind = ShardSpec::Kind;

ParameterInfo param(std::string name, Shape shape, ShardSpec shard) {
    const bool decays = megatron_weight_decay(name, shape);
    return {std::move(name), std::move(shape), DType::f32, shard, decays};
}

ShardSpec replicated() {
    return {Kind::replicated, 0, 1};
}
ShardSpec column(int64_t groups = 1) {
    return {Kind::column, 0, groups};
}
// SwiGLU's fc1 [gate; up] when `glu`: every rank holds its slice of both halves.
ShardSpec fc1_shard(bool glu) {
    return glu ? ShardSpec{Kind::column, 0, 2, true} : column();
}
ShardSpec row() {
    return {Kind::row, 1, 1};
}
ShardSpec vocab() {
    return {Kind::vocab, 0, 1};
}

// A norm module's "<prefix>.weight" / ".bias".
void add_norm(std::vector<ParameterInfo>& out, const std::string& prefix, const GptConfig& c) {
    out.push_back(param(prefix + ".weight", {c.hidden_size}, replicated()));
    if (c.normalization == Normalization::layer_norm)
        out.push_back(param(prefix + ".bias", {c.hidden_size}, replicated()));
}

// A norm fused into a Transformer Engine LayerNormLinear: "<linear>.layer_norm_weight" / _bias,
// registered before the linear's own weight and bias.
void add_fused_norm(std::vector<ParameterInfo>& out, const std::string& linear,
                    const GptConfig& c) {
    out.push_back(param(linear + ".layer_norm_weight", {c.hidden_size}, replicated()));
    if (c.normalization == Normalization::layer_norm)
        out.push_back(param(linear + ".layer_norm_bias", {c.hidden_size}, replicated()));
}

}  // namespace

std::vector<ParameterInfo> gpt_parameters(const GptConfig& c) {
    const int64_t h = c.hidden_size, hd = c.kv_channels;
    const int64_t q = c.num_attention_heads * hd;
    const int64_t qkv = (c.num_attention_heads + 2 * c.num_query_groups) * hd;
    const int64_t fc1 = c.ffn_hidden_size * (c.swiglu ? 2 : 1);

    const bool te = c.transformer_impl == TransformerImpl::transformer_engine;

    std::vector<ParameterInfo> out;
    out.push_back(param("embedding.word_embeddings.weight", {c.padded_vocab_size, h}, vocab()));
    if (c.position_embedding == PositionEmbedding::learned_absolute)
        out.push_back(param("embedding.position_embeddings.weight", {c.max_position_embeddings, h},
                            replicated()));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        // Registration order of Megatron-core's modules: linear_proj is built before linear_qkv.
        const std::string layer = "decoder.layers." + std::to_string(i);
        if (!te) add_norm(out, layer + ".input_layernorm", c);
        out.push_back(param(layer + ".self_attention.linear_proj.weight", {h, q}, row()));
        if (c.add_bias_linear)
            out.push_back(param(layer + ".self_attention.linear_proj.bias", {h}, replicated()));
        if (te) add_fused_norm(out, layer + ".self_attention.linear_qkv", c);
        // QKV rows are grouped per query group, so ranks split whole groups.
        out.push_back(param(layer + ".self_attention.linear_qkv.weight", {qkv, h},
                            column(c.num_query_groups)));
        if (c.add_qkv_bias)
            out.push_back(param(layer + ".self_attention.linear_qkv.bias", {qkv},
                                column(c.num_query_groups)));
        if (te)
            add_fused_norm(out, layer + ".mlp.linear_fc1", c);
        else
            add_norm(out, layer + ".pre_mlp_layernorm", c);
        // SwiGLU's fc1 is [gate; up]: each rank holds its slice of both halves.
        out.push_back(param(layer + ".mlp.linear_fc1.weight", {fc1, h}, fc1_shard(c.swiglu)));
        if (c.add_bias_linear)
            out.push_back(param(layer + ".mlp.linear_fc1.bias", {fc1}, fc1_shard(c.swiglu)));
        out.push_back(param(layer + ".mlp.linear_fc2.weight", {h, c.ffn_hidden_size}, row()));
        if (c.add_bias_linear)
            out.push_back(param(layer + ".mlp.linear_fc2.bias", {h}, replicated()));
    }
    add_norm(out, "decoder.final_layernorm", c);
    if (c.untie_embeddings_and_output_weights)
        out.push_back(param("output_layer.weight", {c.padded_vocab_size, h}, vocab()));
    return out;
}

}  // namespace mt::plugins::gpt
