// Gemma 3's text model (transformers' Gemma3ForCausalLM, model_type gemma3_text, or the text part
// of a multimodal Gemma3ForConditionalGeneration folder, model_type gemma3): Llama's layout
// with a norm before and after each sublayer, q/k RMSNorms, every RMSNorm scaling by 1 + weight,
// a GeGLU MLP (gelu_pytorch_tanh), embeddings scaled by sqrt(hidden), sliding-window ("local")
// layers with a rope base of their own between full ones, and the queries scaled by
// query_pre_attn_scalar^-1/2. Megatron's GPT with --normalization RMSNorm --apply-layernorm-1p
// --qk-layernorm --disable-bias-linear and megatron.cpp's --geglu --post-sublayer-norm
// --scale-embeddings --rotary-base-local --softmax-scale, under the keys of Megatron-Bridge's
// Gemma 3 layer spec (linear_proj.post_layernorm, linear_fc2.post_layernorm).
#include <cmath>

#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_saver_args.h"
#include "rope_scaling.h"
#include "sliding_window.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// One layer type's rope (rope_parameters' entries in transformers 5; rope_scaling in 4): the full
// layers' may scale (linearly: Gemma 3's released 4B-27B), the local layers' may not.
void read_layer_rope(const ConfigJson& r, bool full, HfConfig& c) {
    if (!full) {
        const std::string type = r.text("rope_type", r.text("type", "default"));
        MT_CHECK(type == "default", r.where(), ": not supported yet: '", type,
                 "' rope scaling on Gemma 3's local layers (their rope is plain)");
        return;
    }
    read_rope_scaling(r, r.where(), c);
    MT_CHECK(c.llama3_rope_factor == 0, r.where(),
             ": not supported yet: llama3 rope scaling on Gemma 3's full layers (they scale "
             "linearly)");
}

void read_rope(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    c.rope_theta = j.real("rope_theta", 1000000);
    c.gemma3.local_rope_theta = j.real("rope_local_base_freq", 10000);
    simdjson::dom::object rope;
    if (!j.object()["rope_parameters"].get_object().get(rope)) {
        const ConfigJson all(rope, where + " rope_parameters");
        for (const auto& [type, full] :
             {std::pair{"full_attention", true}, std::pair{"sliding_attention", false}}) {
            simdjson::dom::object one;
            MT_CHECK(!rope[type].get_object().get(one), all.where(), ": no '", type, "' object");
            const ConfigJson r(one, all.where() + " " + type);
            (full ? c.rope_theta : c.gemma3.local_rope_theta) = r.real("rope_theta", 0);
            read_layer_rope(r, full, c);
        }
    } else if (!j.object()["rope_scaling"].get_object().get(rope)) {
        read_layer_rope(ConfigJson(rope, where + " rope_scaling"), true, c);
    }
    MT_CHECK(c.rope_theta > 0 && c.gemma3.local_rope_theta > 0, where,
             ": the rope bases must be positive");
}

void read_gemma3(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    const std::string act = j.text("hidden_activation", j.text("hidden_act", "gelu_pytorch_tanh"));
    MT_CHECK(act == "gelu_pytorch_tanh", where, ": not supported yet: 'hidden_activation' ", act,
             " (Gemma's is gelu_pytorch_tanh, megatron.cpp's --geglu)");
    MT_CHECK(!j.boolean("attention_bias", false), where,
             ": not supported yet: 'attention_bias' true (Gemma 3 with attention biases)");
    for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
        MT_CHECK(!j.has(key), where, ": not supported yet: '", key,
                 "' (logit soft-capping, which Gemma 3 does not use)");
    MT_CHECK(!j.boolean("use_bidirectional_attention", false), where,
             ": not supported yet: 'use_bidirectional_attention' true (a bidirectional Gemma 3)");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    read_attention_heads(j, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-6);
    c.tied = j.boolean("tie_word_embeddings", true);
    c.initializer_range = j.real("initializer_range", 0.02);
    c.qk_norm = true;
    c.gemma3.query_pre_attn_scalar = j.real("query_pre_attn_scalar", double(c.head_dim));
    MT_CHECK(c.gemma3.query_pre_attn_scalar > 0, where,
             ": 'query_pre_attn_scalar' must be positive");
    read_rope(j, c);
    c.sliding_window = j.integer("sliding_window", 4096);
    MT_CHECK(c.sliding_window > 0, where, ": 'sliding_window' must be positive");
    if (j.has("layer_types")) {
        read_windowed_layers(j, c);
    } else {
        // transformers 4: every sliding_window_pattern-th layer is full.
        const int64_t pattern = j.integer("sliding_window_pattern", 6);
        MT_CHECK(pattern > 0, where, ": 'sliding_window_pattern' must be positive");
        for (int64_t i = 0; i < c.num_layers; ++i)
            c.windowed_layers.push_back((i + 1) % pattern != 0);
    }
}

// The norm of a Gemma3DecoderLayer and the Megatron key it is (Megatron-Bridge's names).
struct LayerNorm {
    const char* hf;
    const char* megatron;
};
constexpr LayerNorm kLayerNorms[] = {
    {"input_layernorm", "self_attention.linear_qkv.layer_norm_weight"},
    {"post_attention_layernorm", "self_attention.linear_proj.post_layernorm.weight"},
    {"pre_feedforward_layernorm", "mlp.linear_fc1.layer_norm_weight"},
    {"post_feedforward_layernorm", "mlp.linear_fc2.post_layernorm.weight"}};

void import_gemma3(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    const std::string& text = c.gemma3.text_prefix;  // the vision tower and projector are left
    in.put("embedding.word_embeddings.weight",
           in.hf(text + "model.embed_tokens.weight", {c.vocab_size, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = text + "model.layers." + std::to_string(i) + ".";
        const std::string dst = "decoder.layers." + std::to_string(i) + ".";
        const std::string attn = dst + "self_attention.", sa = src + "self_attn.";
        for (const LayerNorm& n : kLayerNorms)
            in.put(dst + n.megatron, in.hf(src + n.hf + ".weight", {h}));
        in.put_qkv(attn + "linear_qkv.weight", in.hf(sa + "q_proj.weight", {nq * hd, h}),
                   in.hf(sa + "k_proj.weight", {ng * hd, h}),
                   in.hf(sa + "v_proj.weight", {ng * hd, h}), nq, ng, hd);
        in.put(attn + "q_layernorm.weight", in.hf(sa + "q_norm.weight", {hd}));
        in.put(attn + "k_layernorm.weight", in.hf(sa + "k_norm.weight", {hd}));
        in.put(attn + "linear_proj.weight", in.hf(sa + "o_proj.weight", {h, nq * hd}));
        in.put_swiglu(dst + "mlp.", src + "mlp.", f);
    }
    in.put("decoder.final_layernorm.weight", in.hf(text + "model.norm.weight", {h}));
    if (!c.tied) in.put("output_layer.weight", in.hf(text + "lm_head.weight", {c.vocab_size, h}));
}

// In Gemma3DecoderLayer's state-dict order (attention, MLP, then the four norms), which decides
// where shards split.
void export_gemma3(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    out.put("model.embed_tokens.weight", out.vocab_table("embedding.word_embeddings.weight"));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "decoder.layers." + std::to_string(i) + ".";
        const std::string dst = "model.layers." + std::to_string(i) + ".";
        const std::string attn = src + "self_attention.", sa = dst + "self_attn.";
        LazyQkv qkv =
            ungroup(out.get(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h}), nq, ng, hd);
        out.put(sa + "q_proj.weight", std::move(qkv.q));
        out.put(sa + "k_proj.weight", std::move(qkv.k));
        out.put(sa + "v_proj.weight", std::move(qkv.v));
        out.put(sa + "o_proj.weight", out.get(attn + "linear_proj.weight", {h, nq * hd}));
        out.put(sa + "q_norm.weight", out.get(attn + "q_layernorm.weight", {hd}));
        out.put(sa + "k_norm.weight", out.get(attn + "k_layernorm.weight", {hd}));
        out.put_gate_up(dst + "mlp.gate_proj.weight", dst + "mlp.up_proj.weight",
                        out.get(src + "mlp.linear_fc1.weight", {2 * f, h}), f);
        out.put(dst + "mlp.down_proj.weight", out.get(src + "mlp.linear_fc2.weight", {h, f}));
        for (const LayerNorm& n : kLayerNorms)
            out.put(dst + n.hf + ".weight", out.get(src + n.megatron, {h}));
    }
    out.put("model.norm.weight", out.get("decoder.final_layernorm.weight", {h}));
    if (!c.tied) out.put("lm_head.weight", out.vocab_table("output_layer.weight"));
}

// Gemma3TextConfig as transformers 5 writes it (rope_parameters per layer type), with
// transformers 4's rope keys beside them.
Members gemma3_members(const HfConfig& c) {
    std::vector<std::string> types;
    for (int64_t i = 0; i < c.num_layers; ++i)
        types.push_back(c.windowed_layers.empty() || c.windowed_layers[size_t(i)]
                            ? "sliding_attention"
                            : "full_attention");
    const std::optional<Members> scaling = rope_scaling(c);
    Members full = scaling.value_or(Members{{"rope_type", text("default")}});
    full["rope_theta"] = real(c.rope_theta);
    const double q = c.gemma3.query_pre_attn_scalar;
    const Members local = {{"rope_theta", real(c.gemma3.local_rope_theta)},
                           {"rope_type", text("default")}};
    return {
        {"architectures", strings({"Gemma3ForCausalLM"}, 1)},
        {"attention_bias", boolean(false)},
        {"attention_dropout", real(0.0)},
        {"attn_logit_softcapping", "null"},
        {"final_logit_softcapping", "null"},
        {"head_dim", integer(c.head_dim)},
        {"hidden_activation", text("gelu_pytorch_tanh")},
        {"hidden_size", integer(c.hidden_size)},
        {"initializer_range", real(c.initializer_range)},
        {"intermediate_size", integer(c.ffn_hidden_size)},
        {"layer_types", strings(types, 1)},
        {"max_position_embeddings", integer(c.max_position_embeddings)},
        {"model_type", text("gemma3_text")},
        {"num_attention_heads", integer(c.num_heads)},
        {"num_hidden_layers", integer(c.num_layers)},
        {"num_key_value_heads", integer(c.num_kv_heads)},
        // transformers' Gemma3TextConfig holds an int (its validation refuses 24.0).
        {"query_pre_attn_scalar", q == std::round(q) ? integer(int64_t(q)) : real(q)},
        {"rms_norm_eps", real(c.norm_epsilon)},
        {"rope_local_base_freq", real(c.gemma3.local_rope_theta)},
        {"rope_parameters",
         object({{"full_attention", object(full, 2)}, {"sliding_attention", object(local, 2)}}, 1)},
        {"rope_scaling", scaling ? object(*scaling, 1) : "null"},
        {"rope_theta", real(c.rope_theta)},
        {"sliding_window", integer(c.sliding_window)},
        {"tie_word_embeddings", boolean(c.tied)},
        {"use_bidirectional_attention", boolean(false)}};
}

class Gemma3 final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"gemma3_text", "gemma3"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path&,
                     HfConfig& c) const override {
        if (c.model_type == "gemma3_text") return read_gemma3(j, c);
        // Gemma3ForConditionalGeneration: its text model alone (written back as gemma3_text).
        simdjson::dom::object text;
        MT_CHECK(!j.object()["text_config"].get_object().get(text), j.where(),
                 ": a gemma3 config.json without a 'text_config' object");
        read_gemma3(ConfigJson(text, j.where() + " text_config"), c);
        c.tied = j.boolean("tie_word_embeddings", c.tied);
        c.gemma3.text_prefix = "language_model.";
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        a["normalization"] = "RMSNorm";
        a["apply-layernorm-1p"] = "";
        a["position-embedding-type"] = "rope";
        a["rotary-base"] = number_text(c.rope_theta);
        if (c.linear_rope_factor > 0)
            a["rotary-seq-len-interpolation-factor"] = std::to_string(c.linear_rope_factor);
        a["geglu"] = "";
        a["post-sublayer-norm"] = "";
        a["scale-embeddings"] = "";
        a["qk-layernorm"] = "";
        a["disable-bias-linear"] = "";
        if (c.gemma3.query_pre_attn_scalar != double(c.head_dim))
            a["softmax-scale"] = number_text(1.0 / std::sqrt(c.gemma3.query_pre_attn_scalar));
        put_window_args(c, a);
        if (c.sliding_window > 0) a["rotary-base-local"] = number_text(c.gemma3.local_rope_theta);
    }
    void import_tensors(HfImport& in) const override { import_gemma3(in); }
    void export_tensors(HfExport& out) const override { export_gemma3(out); }
    Members config_members(const HfConfig& c) const override { return gemma3_members(c); }

    bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const override {
        return !bert && a.flag("post_sublayer_norm");
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        HfConfig c = transformer_sizes_from_args(a);
        c.model_type = "gemma3_text";
        const std::string why =
            "Gemma 3 is rope, zero-centred RMSNorm, q/k norms, GeGLU, sandwich norms, scaled "
            "embeddings, no biases";
        const std::string norm = a.text("normalization", "LayerNorm");
        if (norm != "RMSNorm") not_supported("normalization", norm, why);
        for (const char* name : {"apply_layernorm_1p", "qk_layernorm", "geglu",
                                 "post_sublayer_norm", "scale_embeddings"})
            if (!a.flag(name)) not_supported(name, "False", why);
        if (a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "True", why);
        for (const char* name :
             {"swiglu", "quick_geglu", "squared_relu", "rotary_interleaved", "use_rope_scaling",
              "qk_l2_norm", "multi_latent_attention", "add_qkv_bias"})
            if (a.flag(name)) not_supported(name, "True", why);
        if (a.set("num_experts"))
            not_supported("num_experts", std::to_string(a.integer("num_experts")), why);
        if (a.text("softmax_type", "vanilla") != "vanilla")
            not_supported("softmax_type", a.text("softmax_type", ""), why);
        const std::string pos = a.text("position_embedding_type", "learned_absolute");
        if (pos != "rope") not_supported("position_embedding_type", pos, why);
        const double percent = a.real("rotary_percent", 1.0);
        if (percent != 1.0) not_supported("rotary_percent", number_text(percent), why);
        c.rope_theta = a.real("rotary_base", 10000);
        c.linear_rope_factor = a.integer("rotary_seq_len_interpolation_factor", 0);
        const double scale = a.real("softmax_scale", 0);
        // The scalar back from its inverse square root: Gemma's are integers (256, 168).
        const double scalar = scale > 0 ? 1.0 / (scale * scale) : double(c.head_dim);
        c.gemma3.query_pre_attn_scalar =
            std::abs(scalar - std::round(scalar)) < 1e-9 * scalar ? std::round(scalar) : scalar;
        if (!read_windows_of_args(a, c))
            not_supported("window_size", "None", why + ", with local layers");
        c.gemma3.local_rope_theta = a.real("rotary_base_local", c.rope_theta);
        return c;
    }
};

}  // namespace

const HfArchitecture& gemma3_architecture() {
    static const Gemma3 kGemma3;
    return kGemma3;
}

}  // namespace mt::plugins::hf
