// Llama and the models that are Llama's layers with a difference (transformers' *ForCausalLM of
// model_type llama, mistral, qwen2 with QKV biases, qwen3 with per-head q/k norms, and the
// sparse-MoE mixtral and qwen3_moe): rope, RMSNorm, SwiGLU, no linear biases; Megatron's GPT
// with --swiglu --normalization RMSNorm --position-embedding-type rope.
#include <algorithm>

#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_layout.h"
#include "hf_saver_args.h"
#include "rope_scaling.h"
#include "sliding_window.h"
#include "topk_moe.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// The names of a sparse MoE block and its experts' projections: Mixtral's block_sparse_moe with
// w1 (gate), w3 (up) and w2 (down); Qwen3-MoE's mlp with gate_proj, up_proj and down_proj.
struct SparseMoeNames {
    std::string block;  // "block_sparse_moe." or "mlp."
    SwigluNames expert;
};
SparseMoeNames sparse_moe_names(const HfConfig& config) {
    if (config.model_type == "qwen3_moe") return {"mlp.", {}};
    return {"block_sparse_moe.", {"w1", "w3", "w2"}};
}

void read_llama(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    MT_CHECK(!j.boolean("attention_bias", false), where,
             ": not supported yet: 'attention_bias' true (Llama with QKV/output biases)");
    MT_CHECK(!j.boolean("mlp_bias", false), where, ": not supported yet: 'mlp_bias' true");
    const std::string act = j.text("hidden_act", "silu");
    MT_CHECK(act == "silu", where, ": not supported yet: 'hidden_act' ", act,
             " (only silu, Megatron's --swiglu)");
    c.rope_theta = j.real("rope_theta", 10000);
    simdjson::dom::object rope;
    if (j.has("rope_scaling")) {
        MT_CHECK(!j.object()["rope_scaling"].get_object().get(rope), where,
                 ": 'rope_scaling' must be an object or null");
        read_rope_scaling(ConfigJson(rope, where + " rope_scaling"), where, c);
    }
    // transformers >= 5 keeps the rope settings in 'rope_parameters'.
    if (!j.object()["rope_parameters"].get_object().get(rope)) {
        const ConfigJson r(rope, where + " rope_parameters");
        read_rope_scaling(r, where, c);
        c.rope_theta = r.real("rope_theta", c.rope_theta);
    }
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    read_attention_heads(j, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-6);
    c.tied = j.boolean("tie_word_embeddings", false);
    // Mistral's window (every layer), Qwen's when use_sliding_window; one at least as long as
    // the positions limits nothing.
    if (j.has("sliding_window") && j.boolean("use_sliding_window", true)) {
        const int64_t window = j.integer("sliding_window");
        MT_CHECK(window > 0, where, ": 'sliding_window' must be positive, got ", window);
        if (window < c.max_position_embeddings) {
            c.sliding_window = window;
            read_windowed_layers(j, c);
        }
    }
}

// MixtralSparseMoeBlock: softmax over the experts, the top k renormalised (Megatron's default
// softmax over the top-k logits), each expert a SwiGLU MLP of intermediate_size.
void read_mixtral_experts(const ConfigJson& j, HfConfig& c) {
    read_topk_experts(j, "num_local_experts", c);
    MT_CHECK(j.real("router_jitter_noise", 0) == 0, j.where(),
             ": not supported yet: 'router_jitter_noise' (Megatron's --moe-input-jitter-eps)");
}

// Qwen3MoeSparseMoeBlock: the softmax over the experts, the top k renormalised when
// norm_topk_prob (else Megatron's --moe-router-pre-softmax), each expert a SwiGLU MLP of
// moe_intermediate_size, every layer sparse.
void read_qwen3_moe_experts(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    // transformers 5 writes num_local_experts, 4 num_experts.
    read_topk_experts(j, j.has("num_local_experts") ? "num_local_experts" : "num_experts", c);
    c.ffn_hidden_size = j.integer("moe_intermediate_size");
    c.router_pre_softmax = !j.boolean("norm_topk_prob", false);
    MT_CHECK(j.integer("decoder_sparse_step", 1) == 1, where,
             ": not supported yet: 'decoder_sparse_step' other than 1 (dense layers between the "
             "sparse ones)");
    simdjson::dom::array dense;
    MT_CHECK(j.object()["mlp_only_layers"].get_array().get(dense) || dense.size() == 0, where,
             ": not supported yet: 'mlp_only_layers' (dense layers among the sparse ones)");
}

// A sparse MoE block (Mixtral's or Qwen3-MoE's, names from sparse_moe_names) as
// Megatron-core's MoE layer (SequentialMLP): its own pre_mlp_layernorm, the router (gate),
// and per expert fc1 = [gate; up], fc2 = down.
void import_sparse_moe(HfImport& in, const std::string& src, const std::string& dst) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size;
    const SparseMoeNames n = sparse_moe_names(c);
    const std::string moe = src + n.block, mlp = dst + "mlp.";
    in.put(dst + "pre_mlp_layernorm.weight", in.hf(src + "post_attention_layernorm.weight", {h}));
    in.put(mlp + "router.weight", in.hf(moe + "gate.weight", {c.num_experts, h}));
    for (int64_t j = 0; j < c.num_experts; ++j)
        in.put_swiglu(mlp + "experts.local_experts." + std::to_string(j) + ".",
                      moe + "experts." + std::to_string(j) + ".", f, n.expert);
}

void import_llama(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    in.put("embedding.word_embeddings.weight",
           in.hf("model.embed_tokens.weight", {c.vocab_size, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "model.layers." + std::to_string(i) + ".";
        const std::string dst = "decoder.layers." + std::to_string(i) + ".";
        const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
        in.put(attn + "linear_proj.weight", in.hf(src + "self_attn.o_proj.weight", {h, nq * hd}));
        in.put(attn + "linear_qkv.layer_norm_weight", in.hf(src + "input_layernorm.weight", {h}));
        const std::string q = in.hf(src + "self_attn.q_proj.weight", {nq * hd, h});
        const std::string k = in.hf(src + "self_attn.k_proj.weight", {ng * hd, h});
        const std::string v = in.hf(src + "self_attn.v_proj.weight", {ng * hd, h});
        in.put_qkv(attn + "linear_qkv.weight", q, k, v, nq, ng, hd);
        if (c.qkv_bias) {  // Qwen2's
            const std::string qb = in.hf(src + "self_attn.q_proj.bias", {nq * hd});
            const std::string kb = in.hf(src + "self_attn.k_proj.bias", {ng * hd});
            const std::string vb = in.hf(src + "self_attn.v_proj.bias", {ng * hd});
            in.put_qkv(attn + "linear_qkv.bias", qb, kb, vb, nq, ng, hd);
        }
        if (c.qk_norm) {  // Qwen3's
            in.put(attn + "q_layernorm.weight", in.hf(src + "self_attn.q_norm.weight", {hd}));
            in.put(attn + "k_layernorm.weight", in.hf(src + "self_attn.k_norm.weight", {hd}));
        }
        if (c.num_experts > 0) {
            import_sparse_moe(in, src, dst);
            continue;
        }
        in.put(mlp + "linear_fc1.layer_norm_weight",
               in.hf(src + "post_attention_layernorm.weight", {h}));
        in.put_swiglu(mlp, src + "mlp.", f);
    }
    in.put("decoder.final_layernorm.weight", in.hf("model.norm.weight", {h}));
    if (!c.tied) in.put("output_layer.weight", in.hf("lm_head.weight", {c.vocab_size, h}));
}

// A MoE layer as MixtralDecoderLayer's (Qwen3MoeDecoderLayer's) state dict holds it: the
// sparse MoE block (gate, then each expert's gate, down and up projections), then the
// norms. Experts under SequentialMLP's or TEGroupedMLP's names alike.
void export_sparse_moe(HfExport& out, const std::string& src, const std::string& dst) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size;
    const SparseMoeNames names = sparse_moe_names(c);
    const std::string mlp = src + "mlp.", moe = dst + names.block;
    out.put(moe + "gate.weight", out.get(mlp + "router.weight", {c.num_experts, h}));
    for (int64_t j = 0; j < c.num_experts; ++j) {
        const Lazy fc1 = out.get(out.expert_fc(mlp, 1, j), {2 * f, h});
        const std::string e = moe + "experts." + std::to_string(j) + ".";
        out.put(e + names.expert.gate + ".weight", fc1.rows(0, f));
        out.put(e + names.expert.down + ".weight", out.get(out.expert_fc(mlp, 2, j), {h, f}));
        out.put(e + names.expert.up + ".weight", fc1.rows(f, 2 * f));
    }
    out.put(dst + "input_layernorm.weight",
            out.get(src + "self_attention.linear_qkv.layer_norm_weight", {h}));
    out.put(dst + "post_attention_layernorm.weight",
            out.get(src + "pre_mlp_layernorm.weight", {h}));
}

void export_llama(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    out.put("model.embed_tokens.weight", out.vocab_table("embedding.word_embeddings.weight"));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "decoder.layers." + std::to_string(i) + ".";
        const std::string dst = "model.layers." + std::to_string(i) + ".";
        const std::string attn = src + "self_attention.", mlp = src + "mlp.";
        // In LlamaDecoderLayer's state-dict order (attention, MLP, then the norms), which
        // decides where shards split.
        LazyQkv qkv =
            ungroup(out.get(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h}), nq, ng, hd);
        LazyQkv bias;  // Qwen2's
        if (c.qkv_bias)
            bias = ungroup(out.get(attn + "linear_qkv.bias", {(nq + 2 * ng) * hd}), nq, ng, hd);
        for (auto [name, w, b] :
             {std::tuple{"q_proj", &qkv.q, &bias.q}, std::tuple{"k_proj", &qkv.k, &bias.k},
              std::tuple{"v_proj", &qkv.v, &bias.v}}) {
            out.put(dst + "self_attn." + name + ".weight", std::move(*w));
            if (c.qkv_bias) out.put(dst + "self_attn." + name + ".bias", std::move(*b));
        }
        out.put(dst + "self_attn.o_proj.weight",
                out.get(attn + "linear_proj.weight", {h, nq * hd}));
        if (c.qk_norm) {  // Qwen3's
            out.put(dst + "self_attn.q_norm.weight", out.get(attn + "q_layernorm.weight", {hd}));
            out.put(dst + "self_attn.k_norm.weight", out.get(attn + "k_layernorm.weight", {hd}));
        }
        if (c.num_experts > 0) {
            export_sparse_moe(out, src, dst);
            continue;
        }
        out.put_gate_up(dst + "mlp.gate_proj.weight", dst + "mlp.up_proj.weight",
                        out.get(mlp + "linear_fc1.weight", {2 * f, h}), f);
        out.put(dst + "mlp.down_proj.weight", out.get(mlp + "linear_fc2.weight", {h, f}));
        out.put(dst + "input_layernorm.weight",
                out.get(attn + "linear_qkv.layer_norm_weight", {h}));
        out.put(dst + "post_attention_layernorm.weight",
                out.get(mlp + "linear_fc1.layer_norm_weight", {h}));
    }
    out.put("model.norm.weight", out.get("decoder.final_layernorm.weight", {h}));
    if (!c.tied) out.put("lm_head.weight", out.vocab_table("output_layer.weight"));
}

Members llama_members(const HfConfig& c) {
    const bool mistral = c.model_type == "mistral", mixtral = c.model_type == "mixtral";
    const bool qwen_moe = c.model_type == "qwen3_moe";
    const bool qwen = c.model_type == "qwen2" || c.model_type == "qwen3" || qwen_moe;
    const char* architecture = mixtral                   ? "MixtralForCausalLM"
                               : mistral                 ? "MistralForCausalLM"
                               : c.model_type == "qwen2" ? "Qwen2ForCausalLM"
                               : c.model_type == "qwen3" ? "Qwen3ForCausalLM"
                               : qwen_moe                ? "Qwen3MoeForCausalLM"
                                                         : "LlamaForCausalLM";
    Members m = {{"architectures", strings({architecture}, 1)},
                 {"attention_dropout", real(0.0)},
                 {"head_dim", integer(c.head_dim)},
                 {"hidden_act", text("silu")},
                 {"hidden_size", integer(c.hidden_size)},
                 {"initializer_range", real(c.initializer_range)},
                 {"intermediate_size", integer(c.ffn_hidden_size)},
                 {"max_position_embeddings", integer(c.max_position_embeddings)},
                 {"model_type", text(c.model_type)},
                 {"num_attention_heads", integer(c.num_heads)},
                 {"num_hidden_layers", integer(c.num_layers)},
                 {"num_key_value_heads", integer(c.num_kv_heads)},
                 {"rms_norm_eps", real(c.norm_epsilon)},
                 {"rope_theta", real(c.rope_theta)},
                 {"tie_word_embeddings", boolean(c.tied)}};
    put_rope_settings(m, rope_scaling(c), c.rope_theta);
    const std::string window = c.sliding_window > 0 ? integer(c.sliding_window) : "null";
    if (mixtral) {
        m["sliding_window"] = window;
        m["num_local_experts"] = integer(c.num_experts);
        m["num_experts_per_tok"] = integer(c.experts_per_token);
        m["router_jitter_noise"] = real(0.0);
        m["output_router_logits"] = boolean(false);
    } else if (mistral) {
        m["sliding_window"] = window;
    } else if (qwen) {
        // Qwen windows the layers from max_window_layers on.
        m["sliding_window"] = window;
        m["use_sliding_window"] = boolean(c.sliding_window > 0);
        if (c.sliding_window > 0)
            m["max_window_layers"] =
                integer(std::find(c.windowed_layers.begin(), c.windowed_layers.end(), true) -
                        c.windowed_layers.begin());
        if (c.model_type != "qwen2") m["attention_bias"] = boolean(false);
        if (qwen_moe) {
            // Every layer sparse: intermediate_size (the dense layers' size, none here) is left
            // at the experts' size the common members wrote.
            // transformers 5 reads either name, 4 only num_experts.
            m["num_experts"] = m["num_local_experts"] = integer(c.num_experts);
            m["num_experts_per_tok"] = integer(c.experts_per_token);
            m["moe_intermediate_size"] = integer(c.ffn_hidden_size);
            m["norm_topk_prob"] = boolean(!c.router_pre_softmax);
            m["decoder_sparse_step"] = integer(1);
            m["mlp_only_layers"] = "[]";
            m["output_router_logits"] = boolean(false);
        }
    } else {
        m["attention_bias"] = boolean(false);
        m["mlp_bias"] = boolean(false);
        m["pretraining_tp"] = integer(1);
    }
    return m;
}

// A MoE rope model as Mixtral (with per-head q/k norms: as Qwen3-MoE): every layer a sparse MoE
// block of the experts' FFN size, routed as transformers routes (softmax of the top-k logits, or
// for Qwen3-MoE of all logits; no capacity, no shared experts).
void read_mixtral_args(const SaverArgs& a, HfConfig& c) {
    if (!a.set("num_experts")) return;
    // Qwen3-MoE is Mixtral's routing with Qwen3's attention, and may score all experts first.
    const bool qwen = c.qk_norm;
    c.model_type = qwen ? "qwen3_moe" : "mixtral";
    const std::string why =
        qwen ? "Qwen3-MoE's every layer routes each token to the softmax of its router logits, "
               "over experts alone"
             : "Mixtral's every layer routes each token to the softmax of its top-k "
               "router logits, over experts alone";
    read_topk_moe_args(a, why, c);
    c.router_pre_softmax = a.flag("moe_router_pre_softmax");
    if (c.router_pre_softmax && !qwen) not_supported("moe_router_pre_softmax", "True", why);
}

// A sliding window's layers as the model_type has them: Mistral's and Mixtral's on every layer,
// Qwen's from max_window_layers on; Llama has none, so a windowed Llama is written as Mistral.
void read_window_args(const SaverArgs& a, HfConfig& c) {
    const nn::AttentionWindows w = windows_of(a, c.num_layers);
    if (!w.enabled()) return;
    c.sliding_window = w.left + 1;
    const auto first = std::find(w.windowed.begin(), w.windowed.end(), true);
    if (first == w.windowed.end()) {
        c.sliding_window = 0;  // no layer windowed
        return;
    }
    const bool all = first == w.windowed.begin() &&
                     std::find(first, w.windowed.end(), false) == w.windowed.end();
    if (c.model_type == "llama") c.model_type = "mistral";
    if (!all) c.windowed_layers = w.windowed;
    const bool qwen = c.model_type.starts_with("qwen");
    if (!all && (!qwen || std::find(first, w.windowed.end(), false) != w.windowed.end()))
        not_supported("window_attn_skip_freq", "a pattern of full-attention layers",
                      qwen ? "Qwen windows every layer from max_window_layers on"
                           : "Mistral and Mixtral window every layer");
}

class Llama final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override {
        return {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe"};
    }
    void read_config(const ConfigJson& j, const std::filesystem::path&,
                     HfConfig& c) const override {
        read_llama(j, c);
        // Qwen2Attention always has q/k/v biases (no config key says so); Qwen3's q_norm and
        // k_norm are Megatron's q_layernorm and k_layernorm.
        c.qkv_bias = c.model_type == "qwen2";
        c.qk_norm = c.model_type == "qwen3" || c.model_type == "qwen3_moe";
        if (c.model_type == "qwen3_moe") read_qwen3_moe_experts(j, c);
        if (c.model_type == "mixtral") read_mixtral_experts(j, c);
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        a["normalization"] = "RMSNorm";
        a["position-embedding-type"] = "rope";
        a["rotary-base"] = number_text(c.rope_theta);
        a["swiglu"] = "";
        a["disable-bias-linear"] = "";
        if (c.llama3_rope_factor > 0) {
            a["use-rope-scaling"] = "";
            a["rope-scaling-factor"] = number_text(c.llama3_rope_factor);
        }
        if (c.linear_rope_factor > 0)
            a["rotary-seq-len-interpolation-factor"] = std::to_string(c.linear_rope_factor);
        if (c.qkv_bias) a["add-qkv-bias"] = "";
        if (c.qk_norm) a["qk-layernorm"] = "";
        put_window_args(c, a);
        if (c.num_experts > 0) put_topk_moe_args(c, a);
        if (c.router_pre_softmax) a["moe-router-pre-softmax"] = "";
    }
    void import_tensors(HfImport& in) const override { import_llama(in); }
    void export_tensors(HfExport& out) const override { export_llama(out); }
    Members config_members(const HfConfig& c) const override { return llama_members(c); }

    bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const override {
        return !bert && a.text("position_embedding_type", "learned_absolute") == "rope";
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        HfConfig c = transformer_config_from_args(a);
        // QKV biases are Qwen2's, per-head q/k norms Qwen3's; Megatron's args cannot tell Mistral
        // from Llama, hf_checkpoint_args's record of the folder can.
        c.qkv_bias = a.flag("add_qkv_bias");
        c.qk_norm = a.flag("qk_layernorm");
        c.model_type = c.qkv_bias                                 ? "qwen2"
                       : c.qk_norm                                ? "qwen3"
                       : a.text(kHfModelTypeArg, "") == "mistral" ? "mistral"
                                                                  : "llama";
        const std::string why =
            "rope models are exported as Llama/Mistral (RMSNorm, SwiGLU, no biases), Qwen2 (with "
            "QKV biases) or Qwen3 (with per-head q/k norms)";
        const std::string norm = a.text("normalization", "LayerNorm");
        if (norm != "RMSNorm") not_supported("normalization", norm, why);
        if (!a.flag("swiglu")) not_supported("swiglu", "False", why);
        if (a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "True", why);
        if (c.qkv_bias && c.qk_norm) not_supported("qk_layernorm", "True", why);
        if (a.flag("rotary_interleaved"))
            not_supported("rotary_interleaved", "True", "Llama rotates halves, not pairs");
        if (a.flag("use_rope_scaling")) c.llama3_rope_factor = a.real("rope_scaling_factor", 8.0);
        c.linear_rope_factor = a.integer("rotary_seq_len_interpolation_factor", 0);
        const double percent = a.real("rotary_percent", 1.0);
        if (percent != 1.0)
            not_supported("rotary_percent", number_text(percent), "Llama rotates whole heads");
        c.rope_theta = a.real("rotary_base", 10000);
        if (a.set("num_experts") && c.qkv_bias)
            not_supported("add_qkv_bias", "True",
                          "mixture-of-experts models are exported as Mixtral or Qwen3-MoE, which "
                          "have no QKV biases");
        read_mixtral_args(a, c);
        read_window_args(a, c);
        return c;
    }
};

}  // namespace

const HfArchitecture& llama_architecture() {
    static const Llama kLlama;
    return kLlama;
}

}  // namespace mt::plugins::hf
