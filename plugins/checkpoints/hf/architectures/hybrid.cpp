// Megatron's MambaModel as transformers' Mamba2ForCausalLM (model_type mamba2: every layer
// Mamba) or NemotronHForCausalLM (nemotron_h: Mamba, attention, MLP and MoE layers by its
// pattern, each with one pre-norm); the tensor names of both directions are hybrid_tensors.h's.
#include <cmath>
#include <map>

#include "architectures/grouped_moe.h"
#include "architectures/hybrid_tensors.h"
#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_saver_args.h"
#include "mt/nn/hybrid_layer_pattern.h"
#include "mt/nn/mamba_config.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// The first of `keys` the config has (older Nemotron-H configs use mamba_-prefixed names), or
// the first key when none is there.
const char* key_of(const ConfigJson& j, std::initializer_list<const char*> keys) {
    for (const char* k : keys)
        if (j.has(k)) return k;
    return *keys.begin();
}

// time_step_limit (transformers writes infinity as {"__float__": "Infinity"}): Megatron's mixer
// does not clamp dt, so only (0, inf) is its network.
bool unclamped_time_step(const ConfigJson& j) {
    if (!j.has("time_step_limit")) return true;
    simdjson::dom::array limit;
    if (j.object()["time_step_limit"].get_array().get(limit) || limit.size() != 2) return false;
    double low = -1;
    if (limit.at(0).get_double().get(low) || low != 0) return false;
    double high = 0;
    if (!limit.at(1).get_double().get(high)) return std::isinf(high);
    std::string_view text;
    return !limit.at(1)["__float__"].get_string().get(text) && text == "Infinity";
}

// The Mamba mixer of Mamba2Config or NemotronHConfig (`prefix` "mamba_" on Nemotron-H's head
// keys) as Megatron's MambaMixer computes it: SiLU convolution of width 4 with bias, no
// projection biases, dt unclamped, the gated norm's epsilon 1e-5.
void read_mamba_mixer(const ConfigJson& j, bool nemotron, HfConfig& c) {
    const std::string& where = j.where();
    nn::MambaConfig& m = c.hybrid.mixer;
    m.num_heads = j.integer(nemotron ? "mamba_num_heads" : "num_heads");
    m.head_dim = j.integer(nemotron ? "mamba_head_dim" : "head_dim");
    m.state_dim = j.integer(nemotron ? "ssm_state_size" : "state_size");
    m.num_groups = j.integer(key_of(j, {"n_groups", "mamba_n_groups"}));
    MT_CHECK(m.num_heads > 0 && m.head_dim > 0 && m.state_dim > 0 && m.num_groups > 0 &&
                 m.num_heads % m.num_groups == 0,
             where, ": the Mamba heads (", m.num_heads, " of ", m.head_dim, "), state (",
             m.state_dim, ") and groups (", m.num_groups,
             ") must be positive, the heads a multiple of the groups");
    const int64_t width = j.integer(key_of(j, {"conv_kernel", "mamba_d_conv"}), 4);
    MT_CHECK(width == m.conv_width, where, ": not supported yet: 'conv_kernel' ", width,
             " (Megatron's Mamba mixer convolves over ", m.conv_width, ")");
    const std::string act = j.text(nemotron ? "mamba_hidden_act" : "hidden_act", "silu");
    MT_CHECK(act == "silu", where, ": not supported yet: Mamba activation '", act,
             "' (Megatron's mixer applies SiLU)");
    for (const char* bias : {"use_bias", "mamba_proj_bias"})
        MT_CHECK(!j.boolean(bias, false), where, ": not supported yet: '", bias,
                 "' true (Megatron's Mamba projections have no bias)");
    MT_CHECK(j.boolean(key_of(j, {"use_conv_bias", "mamba_conv_bias"}), true), where,
             ": not supported yet: 'use_conv_bias' false (Megatron's convolution has a bias)");
    // Nemotron-H's modelling clamps dt at time_step_min whatever the config says (see README).
    MT_CHECK(nemotron || unclamped_time_step(j), where,
             ": not supported yet: a 'time_step_limit' other than [0, inf] (Megatron's Mamba "
             "mixer does not clamp dt)");
    MT_CHECK(c.norm_epsilon == nn::MambaConfig::gated_norm_epsilon, where,
             ": not supported yet: 'layer_norm_epsilon' ", c.norm_epsilon,
             " (Megatron's gated norm in the Mamba mixer uses ",
             nn::MambaConfig::gated_norm_epsilon, ")");
}

// Mamba2ForCausalLM: every layer a Mamba layer (inner width expand x hidden = heads x head_dim).
// It has no position limit; Megatron's MambaModel needs one: 4096, pretrain_mamba.py's
// examples' sequence length.
void read_mamba2(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    MT_CHECK(j.boolean("rms_norm", true), where,
             ": not supported yet: 'rms_norm' false (Megatron's Mamba layers use RMSNorm)");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.vocab_size = j.integer("vocab_size");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = j.boolean("tie_word_embeddings", false);
    c.max_position_embeddings = 4096;
    read_mamba_mixer(j, false, c);
    const int64_t expand = j.integer("expand", 2);
    MT_CHECK(expand * c.hidden_size == c.hybrid.mixer.num_heads * c.hybrid.mixer.head_dim, where,
             ": 'expand' x 'hidden_size' (", expand, " x ", c.hidden_size,
             ") must equal 'num_heads' x 'head_dim' (", c.hybrid.mixer.num_heads, " x ",
             c.hybrid.mixer.head_dim, ")");
    c.hybrid.pattern = std::string(size_t(std::max<int64_t>(c.num_layers, 0)), 'M');
    // The attention sizes Megatron's args need although no layer attends (heads of the mixer's
    // width, so a tensor-parallel split that fits the Mamba heads fits them too).
    c.num_heads = c.num_kv_heads = c.hybrid.mixer.num_heads;
    c.head_dim = c.hybrid.mixer.head_dim;
    c.ffn_hidden_size = 4 * c.hidden_size;
}

// The layer pattern of a NemotronHConfig: layers_block_type (transformers 5, legacy "mamba" and
// "attention" names too) or hybrid_override_pattern (the hub's configs).
std::string nemotron_h_pattern(const ConfigJson& j) {
    const std::string& where = j.where();
    simdjson::dom::array types;
    if (j.object()["layers_block_type"].get_array().get(types)) {
        const std::string pattern = j.text("hybrid_override_pattern", "");
        MT_CHECK(!pattern.empty(), where,
                 ": has neither 'layers_block_type' nor 'hybrid_override_pattern'");
        return pattern;
    }
    static const std::map<std::string, char> kSymbol = {
        {"linear_attention", 'M'}, {"mamba", 'M'}, {"full_attention", '*'},
        {"attention", '*'},        {"mlp", '-'},   {"moe", 'E'}};
    std::string pattern;
    for (auto type : types) {
        std::string_view name;
        MT_CHECK(!type.get_string().get(name), where, ": 'layers_block_type' holds a non-string");
        const auto it = kSymbol.find(std::string(name));
        MT_CHECK(it != kSymbol.end(), where, ": 'layers_block_type' holds '",
                 std::string(name.substr(0, 64)), "'");
        pattern += it->second;
    }
    return pattern;
}

// NemotronHMoE: the grouped routing, a shared expert of its own size.
void read_nemotron_h_moe(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    read_grouped_moe(j, c);
    // NemotronHMLP(intermediate_size=None) takes the dense MLP's size.
    c.moe.shared_ffn = j.integer("moe_shared_expert_intermediate_size", 0);
    if (c.moe.shared_ffn <= 0) c.moe.shared_ffn = j.integer("intermediate_size");
    MT_CHECK(!j.has("moe_latent_size"), where,
             ": not supported yet: 'moe_latent_size' (the experts' latent projections)");
}

// NemotronHForCausalLM: Mamba, attention (no positions, GQA) and MLP layers (up, relu2, down)
// by its pattern, each with one pre-norm.
void read_nemotron_h(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    c.hybrid.pattern = nemotron_h_pattern(j);
    MT_CHECK(c.hybrid.pattern.find_first_not_of("M*-E") == std::string::npos, where,
             ": the hybrid pattern '", c.hybrid.pattern.substr(0, 200),
             "' holds a symbol other than M, *, - and E");
    if (c.hybrid.pattern.find('E') != std::string::npos) read_nemotron_h_moe(j, c);
    MT_CHECK(j.integer("num_nextn_predict_layers", 0) == 0, where,
             ": not supported yet: 'num_nextn_predict_layers' (multi-token prediction)");
    c.num_layers = int64_t(c.hybrid.pattern.size());
    c.hidden_size = j.integer("hidden_size");
    c.vocab_size = j.integer("vocab_size");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = j.boolean("tie_word_embeddings", false);
    c.max_position_embeddings = j.integer("max_position_embeddings");
    read_attention_heads(j, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    const std::string act = j.text("mlp_hidden_act", "relu2");
    MT_CHECK(act == "relu2", where, ": not supported yet: 'mlp_hidden_act' ", act,
             " (only relu2, Megatron's --squared-relu)");
    MT_CHECK(!j.boolean("mlp_bias", false), where,
             ": not supported yet: 'mlp_bias' true (Megatron's hybrid MLP then has attention "
             "biases too)");
    MT_CHECK(!j.has("sliding_window"), where, ": not supported yet: 'sliding_window'");
    read_mamba_mixer(j, true, c);
}

// Mamba2ForCausalLM or NemotronHForCausalLM (hybrid_tensors.h); a bare *Model without
// the "backbone." prefix too.
void import_hybrid(HfImport& in) {
    const HfConfig& c = in.config();
    const std::string backbone = in.has("backbone.embeddings.weight") ? "backbone." : "";
    for (const HybridTensor& t : hybrid_tensors(c, backbone)) {
        if (t.kind != HybridTensor::Kind::qkv) {
            in.put(t.megatron, in.hf(t.hf, t.shape));
            continue;
        }
        const int64_t nq = c.num_heads, ng = c.num_kv_heads, hd = c.head_dim;
        const int64_t h = c.hidden_size;
        in.put_qkv(t.megatron, in.hf(t.hf + "q_proj.weight", {nq * hd, h}),
                   in.hf(t.hf + "k_proj.weight", {ng * hd, h}),
                   in.hf(t.hf + "v_proj.weight", {ng * hd, h}), nq, ng, hd);
    }
}

// Mamba2ForCausalLM's or NemotronHForCausalLM's names (hybrid_tensors.h).
void export_hybrid(HfExport& out) {
    const HfConfig& c = out.config();
    for (const HybridTensor& t : hybrid_tensors(c)) {
        if (t.kind == HybridTensor::Kind::vocab) {
            out.put(t.hf, out.vocab_table(t.megatron));
        } else if (t.kind == HybridTensor::Kind::qkv) {
            LazyQkv qkv =
                ungroup(out.get(t.megatron, t.shape), c.num_heads, c.num_kv_heads, c.head_dim);
            out.put(t.hf + "q_proj.weight", std::move(qkv.q));
            out.put(t.hf + "k_proj.weight", std::move(qkv.k));
            out.put(t.hf + "v_proj.weight", std::move(qkv.v));
        } else {
            out.put(t.hf, out.get(t.megatron, t.shape));
        }
    }
}

// The Mamba mixer's keys of Mamba2Config and NemotronHConfig (Megatron's mixer: SiLU, width-4
// convolution with bias, no projection biases, dt from [0.001, 0.1] at initialisation).
Members mamba_members(const HfConfig& c, bool nemotron) {
    const nn::MambaConfig& m = c.hybrid.mixer;
    const std::string prefix = nemotron ? "mamba_" : "";
    return {{prefix + "num_heads", integer(m.num_heads)},
            {prefix + "head_dim", integer(m.head_dim)},
            {nemotron ? "ssm_state_size" : "state_size", integer(m.state_dim)},
            {"n_groups", integer(m.num_groups)},
            {"conv_kernel", integer(m.conv_width)},
            {nemotron ? "mamba_hidden_act" : "hidden_act", text("silu")},
            {"use_bias", boolean(false)},
            {"use_conv_bias", boolean(true)},
            {"time_step_min", real(nn::MambaConfig::dt_min)},
            {"time_step_max", real(nn::MambaConfig::dt_max)},
            {"chunk_size", integer(128)}};
}

Members mamba2_members(const HfConfig& c) {
    Members m = mamba_members(c, false);
    m["architectures"] = strings({"Mamba2ForCausalLM"}, 1);
    // hf_config_from_args checked that the inner width is a multiple of the hidden size.
    m["expand"] = integer(c.hybrid.mixer.num_heads * c.hybrid.mixer.head_dim / c.hidden_size);
    m["hidden_size"] = integer(c.hidden_size);
    m["initializer_range"] = real(c.initializer_range);
    m["layer_norm_epsilon"] = real(c.norm_epsilon);
    m["model_type"] = text("mamba2");
    m["num_hidden_layers"] = integer(c.num_layers);
    m["residual_in_fp32"] = boolean(false);  // Megatron's residual keeps the model's dtype
    m["rms_norm"] = boolean(true);
    m["tie_word_embeddings"] = boolean(c.tied);
    return m;
}

// The pattern as NemotronHConfig's hybrid_override_pattern, which transformers 4's and 5's both
// read (and the hub's configs hold).
Members nemotron_h_members(const HfConfig& c) {
    Members m = mamba_members(c, true);
    m["architectures"] = strings({"NemotronHForCausalLM"}, 1);
    m["attention_bias"] = boolean(false);
    m["attention_dropout"] = real(0.0);
    m["head_dim"] = integer(c.head_dim);
    m["hidden_size"] = integer(c.hidden_size);
    m["hybrid_override_pattern"] = text(c.hybrid.pattern);
    m["initializer_range"] = real(c.initializer_range);
    m["intermediate_size"] = integer(c.ffn_hidden_size);
    m["layer_norm_epsilon"] = real(c.norm_epsilon);
    m["max_position_embeddings"] = integer(c.max_position_embeddings);
    m["mlp_bias"] = boolean(false);
    m["mlp_hidden_act"] = text("relu2");
    m["model_type"] = text("nemotron_h");
    m["num_attention_heads"] = integer(c.num_heads);
    m["num_hidden_layers"] = integer(c.num_layers);
    m["num_key_value_heads"] = integer(c.num_kv_heads);
    m["residual_in_fp32"] = boolean(false);
    m["tie_word_embeddings"] = boolean(c.tied);
    if (c.num_experts > 0) {  // NemotronHMoE layers
        const GroupedMoe& moe = c.moe;
        m["n_routed_experts"] = integer(c.num_experts);
        m["num_experts_per_tok"] = integer(c.experts_per_token);
        m["moe_intermediate_size"] = integer(moe.expert_ffn);
        m["moe_shared_expert_intermediate_size"] = integer(moe.shared_ffn);
        m["n_shared_experts"] = integer(1);
        m["n_group"] = integer(moe.num_groups);
        m["topk_group"] = integer(moe.group_topk);
        m["norm_topk_prob"] = boolean(c.experts_per_token > 1);
        m["routed_scaling_factor"] = real(moe.scaling_factor);
    }
    return m;
}

// A hybrid model's MoE layers as NemotronHMoE routes them: one shared expert always.
void read_nemotron_h_moe_args(const SaverArgs& a, HfConfig& c) {
    const std::string why =
        "NemotronHMoE routes each token by sigmoid scores with a correction bias to experts of "
        "relu2 MLPs, beside one ungated shared expert";
    read_grouped_moe_args(a, c, why);
    if (c.moe.shared_ffn <= 0) not_supported("moe_shared_expert_intermediate_size", "None", why);
}

// Megatron's MambaModel as Mamba2ForCausalLM (every layer Mamba, unless the checkpoint came
// from a Nemotron-H folder) or NemotronHForCausalLM.
HfConfig hybrid_config_from_args(const SaverArgs& a) {
    const std::string why =
        "Mamba-2 and Nemotron-H have RMSNorm, no positions, no biases, "
        "relu2 MLPs and Mamba, attention, MLP and NemotronHMoE layers only";
    for (const char* name : {"qk_layernorm", "apply_layernorm_1p", "swiglu",
                             "multi_latent_attention", "window_size", "add_qkv_bias"})
        if (a.set(name)) not_supported(name, "set", why);
    std::optional<std::string> pattern;
    for (const char* name : {"hybrid_override_pattern", "hybrid_layer_pattern"})
        if (const ArgValue* v = a.find(name); v && std::holds_alternative<std::string>(*v))
            pattern = std::get<std::string>(*v);
    HfConfig c;
    c.num_layers = a.integer("num_layers");
    c.hidden_size = a.integer("hidden_size");
    c.hybrid.pattern = nn::allocate_hybrid_layers(c.num_layers, a.real("hybrid_attention_ratio", 0),
                                                  a.real("hybrid_mlp_ratio", 0), pattern)
                           .layers;
    const bool attention = c.hybrid.pattern.find('*') != std::string::npos;
    const bool mlp = c.hybrid.pattern.find('-') != std::string::npos;
    const bool moe = c.hybrid.pattern.find('E') != std::string::npos;
    if (moe) read_nemotron_h_moe_args(a, c);
    c.model_type = attention || mlp || moe || a.text(kHfModelTypeArg, "") == "nemotron_h"
                       ? "nemotron_h"
                       : "mamba2";
    const std::string norm = a.text("normalization", "LayerNorm");
    if (norm != "RMSNorm") not_supported("normalization", norm, why);
    const std::string position = a.text("position_embedding_type", "learned_absolute");
    if (position != "none" && (attention || position != "rope"))
        not_supported("position_embedding_type", position, why);
    if ((attention || mlp || moe) && a.flag("add_bias_linear", true))
        not_supported("add_bias_linear", "True", why);
    if ((mlp || moe) && !a.flag("squared_relu")) not_supported("squared_relu", "False", why);
    // Absent entries take Megatron's defaults (MambaConfig's), None heads its expand of 2.
    nn::MambaConfig& mixer = c.hybrid.mixer;
    mixer.state_dim = a.integer("mamba_state_dim", mixer.state_dim);
    mixer.head_dim = a.integer("mamba_head_dim", mixer.head_dim);
    mixer.num_groups = a.integer("mamba_num_groups", mixer.num_groups);
    mixer.num_heads = a.integer("mamba_num_heads", mixer.heads(c.hidden_size));
    c.num_heads = a.integer("num_attention_heads");
    c.head_dim = a.integer("kv_channels", c.hidden_size / c.num_heads);
    c.num_kv_heads =
        a.flag("group_query_attention") ? a.integer("num_query_groups", 1) : c.num_heads;
    c.ffn_hidden_size = a.integer("ffn_hidden_size", 4 * c.hidden_size);
    c.max_position_embeddings = a.integer("max_position_embeddings", a.integer("seq_length", 0));
    c.norm_epsilon = a.real("norm_epsilon", 1e-5);
    // transformers' gated norm takes layer_norm_epsilon, Megatron's mixer its fixed one.
    if (c.norm_epsilon != nn::MambaConfig::gated_norm_epsilon &&
        c.hybrid.pattern.find('M') != std::string::npos)
        not_supported("norm_epsilon", number_text(c.norm_epsilon),
                      "the Hugging Face Mamba mixer's gated norm uses layer_norm_epsilon, "
                      "Megatron's 1e-5");
    c.initializer_range = a.real("init_method_std", 0.02);
    c.tied = !a.flag("untie_embeddings_and_output_weights");
    const int64_t inner = c.hybrid.mixer.num_heads * c.hybrid.mixer.head_dim;
    if (c.model_type == "mamba2" && inner % c.hidden_size != 0)
        not_supported("mamba_num_heads", std::to_string(c.hybrid.mixer.num_heads),
                      "Mamba-2's inner width is an integer 'expand' times the hidden size");
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_heads > 0 && c.num_kv_heads > 0 &&
                 c.num_heads % c.num_kv_heads == 0 && c.head_dim > 0 && c.ffn_hidden_size > 0 &&
                 c.hybrid.mixer.num_heads > 0 && c.hybrid.mixer.num_groups > 0 &&
                 c.hybrid.mixer.state_dim > 0 && c.max_position_embeddings > 0,
             "--saver hf: bad sizes in the checkpoint's args of a hybrid model");
    return c;
}

class Hybrid final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"mamba2", "nemotron_h"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path&,
                     HfConfig& c) const override {
        if (c.model_type == "mamba2")
            read_mamba2(j, c);
        else
            read_nemotron_h(j, c);
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        // Megatron's MambaModel: RMSNorm, no positions, no biases, relu2 MLPs.
        a["is-hybrid-model"] = "";
        a["hybrid-override-pattern"] = c.hybrid.pattern;
        a["mamba-state-dim"] = std::to_string(c.hybrid.mixer.state_dim);
        a["mamba-head-dim"] = std::to_string(c.hybrid.mixer.head_dim);
        a["mamba-num-groups"] = std::to_string(c.hybrid.mixer.num_groups);
        a["mamba-num-heads"] = std::to_string(c.hybrid.mixer.num_heads);
        a["normalization"] = "RMSNorm";
        a["position-embedding-type"] = "none";
        a["disable-bias-linear"] = "";
        a["squared-relu"] = "";
        if (c.num_experts > 0) add_grouped_moe_args(c, a);  // Nemotron-H's MoE layers
    }
    void import_tensors(HfImport& in) const override { import_hybrid(in); }
    void export_tensors(HfExport& out) const override { export_hybrid(out); }
    Members config_members(const HfConfig& c) const override {
        return c.model_type == "mamba2" ? mamba2_members(c) : nemotron_h_members(c);
    }

    bool exports(const SaverArgs& a, const std::optional<BertParts>&) const override {
        return megatron_mamba_model(a.all());
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        return hybrid_config_from_args(a);
    }
};

}  // namespace

const HfArchitecture& hybrid_architecture() {
    static const Hybrid kHybrid;
    return kHybrid;
}

}  // namespace mt::plugins::hf
