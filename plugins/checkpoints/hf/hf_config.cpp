#include "hf_config.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <sstream>

#include "hf_tensors.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/nn/hybrid_layer_pattern.h"
#include "mt/nn/mamba_config.h"

namespace mt::plugins::hf {

namespace {

// Typed reads of config.json's keys, each error naming the file and the key.
class Json {
  public:
    Json(simdjson::dom::object object, std::string where) : object_(object), where_(where) {}

    bool has(const char* key) const {
        simdjson::dom::element e;
        return !object_[key].get(e) && !e.is_null();
    }
    int64_t integer(const char* key) const {
        int64_t v = 0;
        MT_CHECK(!object_[key].get_int64().get(v), where_, ": '", key, "' must be an integer");
        return v;
    }
    int64_t integer(const char* key, int64_t fallback) const {
        return has(key) ? integer(key) : fallback;
    }
    double real(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        double v = 0;
        MT_CHECK(!object_[key].get_double().get(v), where_, ": '", key, "' must be a number");
        return v;
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        bool v = false;
        MT_CHECK(!object_[key].get_bool().get(v), where_, ": '", key, "' must be true or false");
        return v;
    }
    std::string text(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        std::string_view v;
        MT_CHECK(!object_[key].get_string().get(v), where_, ": '", key, "' must be a string");
        return std::string(v);
    }
    simdjson::dom::object object() const { return object_; }

  private:
    simdjson::dom::object object_;
    std::string where_;
};

std::string number(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

// rope_scaling / rope_parameters (transformers 4 / 5): the kinds Megatron's RotaryEmbedding
// computes, or "not supported yet" naming the values.
void read_rope_scaling(const Json& r, const std::string& where, HfConfig& c) {
    const std::string type = r.text("rope_type", r.text("type", "default"));
    if (type == "default") return;
    const double factor = r.real("factor", 0);
    if (type == "llama3") {
        const double low = r.real("low_freq_factor", 1), high = r.real("high_freq_factor", 4);
        const int64_t original = r.integer("original_max_position_embeddings", 8192);
        MT_CHECK(factor > 0 && low == 1 && high == 4 && original == 8192, where,
                 ": not supported yet: llama3 rope scaling with factor ", factor,
                 ", low_freq_factor ", low, ", high_freq_factor ", high,
                 ", original_max_position_embeddings ", original,
                 " (Megatron's --use-rope-scaling fixes 1, 4 and 8192)");
        c.llama3_rope_factor = factor;
        return;
    }
    if (type == "linear") {
        MT_CHECK(factor >= 1 && factor == double(int64_t(factor)), where,
                 ": not supported yet: linear rope scaling by ", factor,
                 " (Megatron's --rotary-seq-len-interpolation-factor is an integer)");
        c.linear_rope_factor = int64_t(factor);
        return;
    }
    MT_FAIL(where, ": not supported yet: '", type,
            "' rope scaling (supported are llama3's and linear)");
}

// Llama's and Nemotron-H's attention heads: grouped-query, head_dim when given.
void read_attention_heads(const Json& j, const std::string& where, HfConfig& c) {
    c.num_heads = j.integer("num_attention_heads");
    c.num_kv_heads = j.integer("num_key_value_heads", c.num_heads);
    MT_CHECK(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0, where,
             ": 'num_attention_heads' (", c.num_heads,
             ") must be a positive multiple of 'num_key_value_heads' (", c.num_kv_heads, ")");
    c.head_dim = j.integer("head_dim", c.hidden_size / c.num_heads);
}

void read_llama(const Json& j, const std::string& where, HfConfig& c) {
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
        read_rope_scaling(Json(rope, where + " rope_scaling"), where, c);
    }
    // transformers >= 5 keeps the rope settings in 'rope_parameters'.
    if (!j.object()["rope_parameters"].get_object().get(rope)) {
        const Json r(rope, where + " rope_parameters");
        read_rope_scaling(r, where, c);
        c.rope_theta = r.real("rope_theta", c.rope_theta);
    }
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    read_attention_heads(j, where, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-6);
    c.tied = j.boolean("tie_word_embeddings", false);
    if (j.has("sliding_window")) {
        const int64_t window = j.integer("sliding_window");
        MT_CHECK(!j.boolean("use_sliding_window", true) || window >= c.max_position_embeddings,
                 where, ": not supported yet: 'sliding_window' ", window,
                 " shorter than max_position_embeddings ", c.max_position_embeddings);
    }
}

// MixtralSparseMoeBlock: softmax over the experts, the top k renormalised (Megatron's default
// softmax over the top-k logits), each expert a SwiGLU MLP of intermediate_size.
void read_mixtral_experts(const Json& j, const std::string& where, HfConfig& c) {
    c.num_experts = j.integer("num_local_experts");
    c.experts_per_token = j.integer("num_experts_per_tok");
    MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 && c.experts_per_token <= c.num_experts,
             where, ": 'num_experts_per_tok' (", c.experts_per_token,
             ") must be in [1, 'num_local_experts' (", c.num_experts, ")]");
    MT_CHECK(j.real("router_jitter_noise", 0) == 0, where,
             ": not supported yet: 'router_jitter_noise' (Megatron's --moe-input-jitter-eps)");
}

// Qwen3MoeSparseMoeBlock: the softmax over the experts, the top k renormalised when
// norm_topk_prob (else Megatron's --moe-router-pre-softmax), each expert a SwiGLU MLP of
// moe_intermediate_size, every layer sparse.
void read_qwen3_moe_experts(const Json& j, const std::string& where, HfConfig& c) {
    // transformers 5 writes num_local_experts, 4 num_experts.
    c.num_experts =
        j.has("num_local_experts") ? j.integer("num_local_experts") : j.integer("num_experts");
    c.experts_per_token = j.integer("num_experts_per_tok");
    MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 && c.experts_per_token <= c.num_experts,
             where, ": 'num_experts_per_tok' (", c.experts_per_token, ") must be in [1, ",
             "'num_experts' (", c.num_experts, ")]");
    c.ffn_hidden_size = j.integer("moe_intermediate_size");
    c.router_pre_softmax = !j.boolean("norm_topk_prob", false);
    MT_CHECK(j.integer("decoder_sparse_step", 1) == 1, where,
             ": not supported yet: 'decoder_sparse_step' other than 1 (dense layers between the "
             "sparse ones)");
    simdjson::dom::array dense;
    MT_CHECK(j.object()["mlp_only_layers"].get_array().get(dense) || dense.size() == 0, where,
             ": not supported yet: 'mlp_only_layers' (dense layers among the sparse ones)");
}

void read_gpt2(const Json& j, const std::string& where, HfConfig& c) {
    const std::string act = j.text("activation_function", "gelu_new");
    MT_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", where,
             ": not supported yet: 'activation_function' ", act,
             " (only the tanh GeLU, Megatron's GeLU with biases)");
    MT_CHECK(!j.boolean("scale_attn_by_inverse_layer_idx", false) &&
                 !j.boolean("reorder_and_upcast_attn", false) &&
                 j.boolean("scale_attn_weights", true),
             where,
             ": not supported yet: 'scale_attn_by_inverse_layer_idx', 'reorder_and_upcast_attn' "
             "or 'scale_attn_weights' false");
    MT_CHECK(!j.has("add_cross_attention") || !j.boolean("add_cross_attention", false), where,
             ": not supported yet: 'add_cross_attention'");
    c.num_layers = j.integer("n_layer");
    c.hidden_size = j.integer("n_embd");
    c.num_heads = c.num_kv_heads = j.integer("n_head");
    MT_CHECK(c.num_heads > 0 && c.hidden_size % c.num_heads == 0, where, ": 'n_embd' (",
             c.hidden_size, ") must be a multiple of 'n_head' (", c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
    c.ffn_hidden_size = j.integer("n_inner", 4 * c.hidden_size);
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("n_positions");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = true;
}

// transformers' MegatronBertConfig or BertConfig (the same keys), and the heads the weights
// hold: megatron.cpp's BERT is a pretraining model, so the masked-LM head (cls.predictions)
// must be there; the sentence-order head (cls.seq_relationship, with the pooler) is its binary
// head.
void read_bert(const Json& j, const std::string& where, const std::filesystem::path& dir,
               HfConfig& c) {
    const std::string act = j.text("hidden_act", "gelu");
    MT_CHECK(act == "gelu", where, ": not supported yet: 'hidden_act' ", act,
             " (Megatron's BertLMHead applies the erf GeLU whatever its layers use, and "
             "transformers' BERT applies hidden_act in both: only gelu, the erf GeLU of "
             "--no-bias-gelu-fusion, is the same network)");
    const std::string positions = j.text("position_embedding_type", "absolute");
    MT_CHECK(positions == "absolute", where, ": not supported yet: 'position_embedding_type' ",
             positions, " (megatron.cpp's BERT learns absolute positions)");
    MT_CHECK(!j.boolean("is_decoder", false) && !j.boolean("add_cross_attention", false), where,
             ": not supported yet: 'is_decoder' or 'add_cross_attention' true (megatron.cpp's "
             "BERT is a bidirectional encoder)");
    c.bert.post_layer_norm = c.model_type == "bert";
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.num_heads = c.num_kv_heads = j.integer("num_attention_heads");
    MT_CHECK(c.num_heads > 0 && c.hidden_size % c.num_heads == 0, where, ": 'hidden_size' (",
             c.hidden_size, ") must be a multiple of 'num_attention_heads' (", c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("layer_norm_eps", 1e-12);
    c.initializer_range = j.real("initializer_range", 0.02);
    c.tied = j.boolean("tie_word_embeddings", true);
    c.bert.tokentypes = j.integer("type_vocab_size", 2);
    MT_CHECK(c.bert.tokentypes >= 0, where, ": 'type_vocab_size' must not be negative");
    const HfTensors tensors(dir);
    MT_CHECK(tensors.has("cls.predictions.transform.dense.weight"), dir.string(),
             ": not supported yet: a BERT without the masked-LM head (no cls.predictions.*: a "
             "bare BertModel or a finetuned task model); megatron.cpp builds the pretraining "
             "model (*ForPreTraining, or *ForMaskedLM without the binary head)");
    c.bert.binary_head = tensors.has("cls.seq_relationship.weight");
}

// The first of `keys` the config has (older Nemotron-H configs use mamba_-prefixed names), or
// the first key when none is there.
const char* key_of(const Json& j, std::initializer_list<const char*> keys) {
    for (const char* k : keys)
        if (j.has(k)) return k;
    return *keys.begin();
}

// time_step_limit (transformers writes infinity as {"__float__": "Infinity"}): Megatron's mixer
// does not clamp dt, so only (0, inf) is its network.
bool unclamped_time_step(const Json& j) {
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
void read_mamba_mixer(const Json& j, const std::string& where, bool nemotron, HfConfig& c) {
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

// transformers' T5ForConditionalGeneration (and mT5, umT5) is not Megatron's T5Model: besides an
// RMSNorm without bias, unscaled attention and a tied head scaled by 1/sqrt(d_model), which a
// Megatron T5 could be given (--normalization RMSNorm, weights folded), its MLP and its position
// encoding have no Megatron T5 configuration here. The folder is refused naming the first of
// those fields, rather than loaded as a different model.
[[noreturn]] void refuse_t5(const Json& j, const std::string& where) {
    const std::string mlp = j.text("feed_forward_proj", "relu");
    MT_CHECK(mlp == "gelu", where, ": not supported: 'feed_forward_proj' '",
             mlp.size() > 64 ? mlp.substr(0, 64) + "..." : mlp,
             "' (Megatron's T5 MLP is fc1, GeLU, fc2: it has no ReLU or gated-GeLU T5 "
             "configuration, so this model does not map onto a Megatron T5)");
    MT_FAIL(where, ": not supported yet: 'relative_attention_num_buckets' ",
            j.integer("relative_attention_num_buckets", 32),
            " (T5's relative position buckets: megatron-core's --position-embedding-type "
            "relative)");
}

// Mamba2ForCausalLM: every layer a Mamba layer (inner width expand x hidden = heads x head_dim).
// It has no position limit; Megatron's MambaModel needs one: 4096, pretrain_mamba.py's
// examples' sequence length.
void read_mamba2(const Json& j, const std::string& where, HfConfig& c) {
    MT_CHECK(j.boolean("rms_norm", true), where,
             ": not supported yet: 'rms_norm' false (Megatron's Mamba layers use RMSNorm)");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.vocab_size = j.integer("vocab_size");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = j.boolean("tie_word_embeddings", false);
    c.max_position_embeddings = 4096;
    read_mamba_mixer(j, where, false, c);
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
std::string nemotron_h_pattern(const Json& j, const std::string& where) {
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

// NemotronHMoE's and DeepseekV3MoE's routing and sizes (GroupedMoe, but the shared expert's),
// where they route as Megatron's sigmoid router does: a group's score is the sum of its top two
// (Megatron's: of its top topk / group_topk), and the chosen weights are renormalised exactly when
// there is more than one (Megatron's rule).
void read_grouped_moe(const Json& j, const std::string& where, HfConfig& c) {
    GroupedMoe& moe = c.moe;
    c.num_experts = j.integer("n_routed_experts");
    c.experts_per_token = j.integer("num_experts_per_tok");
    moe.expert_ffn = j.integer("moe_intermediate_size");
    moe.scaling_factor = j.real("routed_scaling_factor", 1.0);
    if (moe.softmax) {
        // DeepseekV2TopkRouter: greedy needs no groups; group_limited_greedy scores a group by
        // its best expert, Megatron by the sum of its top num_experts_per_tok / topk_group.
        const std::string method = j.text("topk_method", "greedy");
        MT_CHECK(method == "greedy", where, ": not supported yet: 'topk_method' ", method,
                 " (DeepSeek-V2 ranks expert groups by their best expert, Megatron by the sum "
                 "of their top ones: only greedy routing converts exactly)");
        MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 &&
                     c.experts_per_token <= c.num_experts && moe.expert_ffn > 0,
                 where, ": bad MoE sizes (n_routed_experts ", c.num_experts,
                 ", num_experts_per_tok ", c.experts_per_token, ", moe_intermediate_size ",
                 moe.expert_ffn, ")");
        return;
    }
    moe.num_groups = j.integer("n_group", 1);
    moe.group_topk = j.integer("topk_group", 1);
    MT_CHECK(c.num_experts > 0 && c.experts_per_token > 0 && c.experts_per_token <= c.num_experts &&
                 moe.expert_ffn > 0 && moe.num_groups > 0 && c.num_experts % moe.num_groups == 0 &&
                 moe.group_topk > 0 && moe.group_topk <= moe.num_groups,
             where, ": bad MoE sizes (n_routed_experts ", c.num_experts, ", num_experts_per_tok ",
             c.experts_per_token, ", moe_intermediate_size ", moe.expert_ffn, ", n_group ",
             moe.num_groups, ", topk_group ", moe.group_topk, ")");
    MT_CHECK(moe.num_groups == 1 || c.experts_per_token == 2 * moe.group_topk, where,
             ": not supported yet: 'topk_group' ", moe.group_topk, " with 'num_experts_per_tok' ",
             c.experts_per_token, " over ", moe.num_groups,
             " groups (transformers scores a group by its top two experts, Megatron by its top "
             "num_experts_per_tok / topk_group)");
    const bool renormalised = j.boolean("norm_topk_prob", true);
    MT_CHECK(renormalised == (c.experts_per_token > 1), where,
             ": not supported yet: 'norm_topk_prob' ", renormalised ? 1 : 0, " with ",
             c.experts_per_token,
             " experts per token (Megatron renormalises sigmoid weights exactly when a token has "
             "more than one)");
}

// NemotronHMoE: the grouped routing, a shared expert of its own size.
void read_nemotron_h_moe(const Json& j, const std::string& where, HfConfig& c) {
    read_grouped_moe(j, where, c);
    // NemotronHMLP(intermediate_size=None) takes the dense MLP's size.
    c.moe.shared_ffn = j.integer("moe_shared_expert_intermediate_size", 0);
    if (c.moe.shared_ffn <= 0) c.moe.shared_ffn = j.integer("intermediate_size");
    MT_CHECK(!j.has("moe_latent_size"), where,
             ": not supported yet: 'moe_latent_size' (the experts' latent projections)");
}

// NemotronHForCausalLM: Mamba, attention (no positions, GQA) and MLP layers (up, relu2, down)
// by its pattern, each with one pre-norm.
void read_nemotron_h(const Json& j, const std::string& where, HfConfig& c) {
    c.hybrid.pattern = nemotron_h_pattern(j, where);
    MT_CHECK(c.hybrid.pattern.find_first_not_of("M*-E") == std::string::npos, where,
             ": the hybrid pattern '", c.hybrid.pattern.substr(0, 200),
             "' holds a symbol other than M, *, - and E");
    if (c.hybrid.pattern.find('E') != std::string::npos) read_nemotron_h_moe(j, where, c);
    MT_CHECK(j.integer("num_nextn_predict_layers", 0) == 0, where,
             ": not supported yet: 'num_nextn_predict_layers' (multi-token prediction)");
    c.num_layers = int64_t(c.hybrid.pattern.size());
    c.hidden_size = j.integer("hidden_size");
    c.vocab_size = j.integer("vocab_size");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = j.boolean("tie_word_embeddings", false);
    c.max_position_embeddings = j.integer("max_position_embeddings");
    read_attention_heads(j, where, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    const std::string act = j.text("mlp_hidden_act", "relu2");
    MT_CHECK(act == "relu2", where, ": not supported yet: 'mlp_hidden_act' ", act,
             " (only relu2, Megatron's --squared-relu)");
    MT_CHECK(!j.boolean("mlp_bias", false), where,
             ": not supported yet: 'mlp_bias' true (Megatron's hybrid MLP then has attention "
             "biases too)");
    MT_CHECK(!j.has("sliding_window"), where, ": not supported yet: 'sliding_window'");
    read_mamba_mixer(j, where, true, c);
}

// DeepseekV3ForCausalLM: multi-latent attention (its q and kv latents RMS-normed: Megatron's
// --qk-layernorm), YaRN or plain rope, first_k_dense_replace dense SwiGLU layers, then DeepSeek's
// MoE (grouped sigmoid routing with a correction bias, n_shared_experts shared experts as one of
// their summed width).
// DeepseekV3Config, or DeepseekV2Config (c.moe.softmax set: V2's routing, no multi-token
// prediction).
void read_deepseek(const Json& j, const std::string& where, const std::filesystem::path& dir,
                   HfConfig& c) {
    MT_CHECK(!j.boolean("attention_bias", false), where,
             ": not supported yet: 'attention_bias' true (Megatron's MLA has no biases)");
    // DeepSeek's published weights are FP8 with a scale per 128x128 block (weight_scale_inv).
    MT_CHECK(!j.has("quantization_config"), where,
             ": not supported yet: 'quantization_config' (FP8 block-scaled weights): dequantise "
             "the folder to bf16 first");
    const std::string act = j.text("hidden_act", "silu");
    MT_CHECK(act == "silu", where, ": not supported yet: 'hidden_act' ", act,
             " (only silu, Megatron's --swiglu)");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.num_heads = c.num_kv_heads = j.integer("num_attention_heads");
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-6);
    c.tied = j.boolean("tie_word_embeddings", false);
    MlaParts& m = c.mla;
    m.q_lora_rank = j.integer("q_lora_rank", 0);  // null: no q-lora
    m.kv_lora_rank = j.integer("kv_lora_rank");
    m.qk_nope_head_dim = j.integer("qk_nope_head_dim");
    m.qk_rope_head_dim = j.integer("qk_rope_head_dim");
    m.v_head_dim = j.integer("v_head_dim");
    // DeepSeek-V2 rotates interleaved pairs always (transformers' complex rotation).
    m.rope_interleave = c.moe.softmax || j.boolean("rope_interleave", true);
    c.head_dim = m.v_head_dim;  // Megatron's DeepSeek recipes give --kv-channels the value head
    MT_CHECK(m.q_lora_rank >= 0 && m.kv_lora_rank > 0 && m.qk_nope_head_dim > 0 &&
                 m.qk_rope_head_dim > 0 && m.qk_rope_head_dim % 2 == 0 && m.v_head_dim > 0,
             where, ": bad multi-latent attention sizes (q_lora_rank ", m.q_lora_rank,
             ", kv_lora_rank ", m.kv_lora_rank, ", qk_nope_head_dim ", m.qk_nope_head_dim,
             ", qk_rope_head_dim ", m.qk_rope_head_dim, ", v_head_dim ", m.v_head_dim, ")");
    // rope_parameters (transformers 5) or rope_scaling and rope_theta (4).
    c.rope_theta = j.real("rope_theta", 10000);
    simdjson::dom::object rope;
    const char* key = j.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
    if (!j.object()[key].get_object().get(rope)) {
        const Json r(rope, where + " " + key);
        c.rope_theta = r.real("rope_theta", c.rope_theta);
        const std::string type = r.text("rope_type", r.text("type", "default"));
        if (type == "yarn") {
            m.yarn_factor = r.real("factor", 0);
            m.original_max_positions = r.integer("original_max_position_embeddings");
            const double mscale = r.real("mscale", 0), all = r.real("mscale_all_dim", 0);
            MT_CHECK(m.yarn_factor > 0 && mscale > 0 && mscale == all, where, " ", key,
                     ": not supported yet: YaRN with factor ", m.yarn_factor, ", mscale ", mscale,
                     " and mscale_all_dim ", all,
                     " (Megatron's MLA scales the softmax by mscale, transformers by "
                     "mscale_all_dim: they must be equal and given)");
            m.yarn_mscale = mscale;
            MT_CHECK(r.real("beta_fast", 32) == 32 && r.real("beta_slow", 1) == 1 &&
                         r.boolean("truncate", true) && !r.has("attention_factor"),
                     where, " ", key,
                     ": not supported yet: YaRN's beta_fast, beta_slow, truncate or "
                     "attention_factor other than Megatron's (32, 1, true, from the mscales)");
        } else {
            MT_CHECK(type == "default", where, " ", key, ": not supported yet: '", type,
                     "' rope scaling with multi-latent attention (supported are yarn and none)");
        }
    }
    if (j.integer("n_routed_experts", 0) > 0) {
        read_grouped_moe(j, where, c);
        c.moe.shared_ffn = j.integer("n_shared_experts", 0) * c.moe.expert_ffn;
        m.first_dense_layers = j.integer("first_k_dense_replace", 0);
        MT_CHECK(m.first_dense_layers >= 0 && m.first_dense_layers <= c.num_layers, where,
                 ": 'first_k_dense_replace' ", m.first_dense_layers, " is not in [0, ",
                 c.num_layers, "]");
        MT_CHECK(c.moe.softmax || (j.text("topk_method", "noaux_tc") == "noaux_tc" &&
                                   j.text("scoring_func", "sigmoid") == "sigmoid"),
                 where, ": not supported yet: 'topk_method' ", j.text("topk_method", ""),
                 " / 'scoring_func' ", j.text("scoring_func", ""),
                 " (DeepSeek-V3's noaux_tc sigmoid routing only)");
    } else {
        m.first_dense_layers = c.num_layers;
    }
    // The multi-token prediction layers config.json counts, when the weights hold them all.
    const int64_t mtp = c.moe.softmax ? 0 : j.integer("num_nextn_predict_layers", 0);
    const HfTensors tensors(dir);
    const auto held = [&](int64_t k) {
        return tensors.has("model.layers." + std::to_string(c.num_layers + k) + ".eh_proj.weight");
    };
    if (mtp > 0 && held(0)) {
        for (int64_t k = 1; k < mtp; ++k)
            MT_CHECK(held(k), dir.string(), ": 'num_nextn_predict_layers' is ", mtp,
                     " but the weights hold no model.layers.", c.num_layers + k, ".eh_proj.weight");
        c.mtp_layers = mtp;
    }
}

}  // namespace

SparseMoeNames sparse_moe_names(const HfConfig& config) {
    if (config.model_type == "qwen3_moe") return {"mlp.", "gate_proj", "up_proj", "down_proj"};
    return {"block_sparse_moe.", "w1", "w3", "w2"};
}

HfConfig read_hf_config(const std::filesystem::path& dir) {
    const std::filesystem::path path = dir / "config.json";
    const std::string where = path.string();
    simdjson::padded_string text;
    MT_CHECK(!simdjson::padded_string::load(where).get(text), where, ": cannot read");
    simdjson::dom::parser parser;
    simdjson::dom::object object;
    auto error = parser.parse(text).get_object().get(object);
    MT_CHECK(!error, where, ": not a JSON object: ", simdjson::error_message(error));
    const Json j(object, where);
    HfConfig c;
    c.model_type = j.text("model_type", "");
    if (c.model_type == "gpt2") {
        c.arch = HfArch::gpt2;
        read_gpt2(j, where, c);
    } else if (c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "qwen2" ||
               c.model_type == "qwen3") {
        c.arch = HfArch::llama;
        read_llama(j, where, c);
        // Qwen2Attention always has q/k/v biases (no config key says so); Qwen3's q_norm and
        // k_norm are Megatron's q_layernorm and k_layernorm.
        c.qkv_bias = c.model_type == "qwen2";
        c.qk_norm = c.model_type == "qwen3";
    } else if (c.model_type == "qwen3_moe") {
        c.arch = HfArch::llama;
        read_llama(j, where, c);
        c.qk_norm = true;
        read_qwen3_moe_experts(j, where, c);
    } else if (c.model_type == "mixtral") {
        c.arch = HfArch::llama;
        read_llama(j, where, c);
        read_mixtral_experts(j, where, c);
    } else if (c.model_type == "megatron-bert" || c.model_type == "bert") {
        c.arch = HfArch::bert;
        read_bert(j, where, dir, c);
    } else if (c.model_type == "mamba2") {
        c.arch = HfArch::hybrid;
        read_mamba2(j, where, c);
    } else if (c.model_type == "nemotron_h") {
        c.arch = HfArch::hybrid;
        read_nemotron_h(j, where, c);
    } else if (c.model_type == "deepseek_v3" || c.model_type == "deepseek_v2") {
        c.arch = HfArch::deepseek;
        c.moe.softmax = c.model_type == "deepseek_v2";
        read_deepseek(j, where, dir, c);
    } else if (c.model_type == "t5" || c.model_type == "mt5" || c.model_type == "umt5") {
        refuse_t5(j, where);
    } else {
        MT_FAIL(where, ": not supported yet: 'model_type' '", c.model_type,
                "' (supported are gpt2, llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, "
                "deepseek_v2, deepseek_v3, megatron-bert, bert, mamba2 and nemotron_h)");
    }
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.ffn_hidden_size > 0 && c.vocab_size > 0 &&
                 c.max_position_embeddings > 0 && c.head_dim > 0,
             where, ": layers, sizes, vocabulary and positions must be positive");
    return c;
}

namespace {

// Megatron's flags for GroupedMoe's routing: sigmoid scores with the expert bias, groups, the
// scaling factor, the shared expert.
void add_grouped_moe_args(const HfConfig& c, ModelArgs& a) {
    const GroupedMoe& moe = c.moe;
    a["num-experts"] = std::to_string(c.num_experts);
    a["moe-router-topk"] = std::to_string(c.experts_per_token);
    a["moe-ffn-hidden-size"] = std::to_string(moe.expert_ffn);
    if (moe.shared_ffn > 0)
        a["moe-shared-expert-intermediate-size"] = std::to_string(moe.shared_ffn);
    if (moe.softmax) {
        a["moe-router-score-function"] = "softmax";
        a["moe-router-pre-softmax"] = "";
    } else {
        a["moe-router-score-function"] = "sigmoid";
        a["moe-router-enable-expert-bias"] = "";
    }
    a["moe-router-topk-scaling-factor"] = number(moe.scaling_factor);
    if (moe.num_groups > 1) {
        a["moe-router-num-groups"] = std::to_string(moe.num_groups);
        a["moe-router-group-topk"] = std::to_string(moe.group_topk);
    }
}

}  // namespace

ModelArgs hf_model_args(const HfConfig& c) {
    ModelArgs a = {{"num-layers", std::to_string(c.num_layers)},
                   {"hidden-size", std::to_string(c.hidden_size)},
                   {"num-attention-heads", std::to_string(c.num_heads)},
                   {"kv-channels", std::to_string(c.head_dim)},
                   {"ffn-hidden-size", std::to_string(c.ffn_hidden_size)},
                   {"max-position-embeddings", std::to_string(c.max_position_embeddings)},
                   {"seq-length", std::to_string(c.max_position_embeddings)},
                   {"vocab-size", std::to_string(c.vocab_size)},
                   {"make-vocab-size-divisible-by", "1"},
                   {"norm-epsilon", number(c.norm_epsilon)},
                   {"attention-dropout", "0"},
                   {"hidden-dropout", "0"}};
    if (c.arch == HfArch::bert) {
        a["no-bias-gelu-fusion"] = "";  // the erf GeLU (read_bert admits no other)
        a["num-tokentypes"] = std::to_string(c.bert.tokentypes);
        if (!c.bert.binary_head) a["bert-no-binary-head"] = "";
        if (c.bert.post_layer_norm) a["post-layer-norm"] = "";
    }
    if (c.arch == HfArch::llama || c.arch == HfArch::deepseek) {
        // Llama's and DeepSeek's layers alike: RMSNorm, rope, SwiGLU, no linear biases.
        a["normalization"] = "RMSNorm";
        a["position-embedding-type"] = "rope";
        a["rotary-base"] = number(c.rope_theta);
        a["swiglu"] = "";
        a["disable-bias-linear"] = "";
    }
    if (c.arch == HfArch::llama) {
        if (c.llama3_rope_factor > 0) {
            a["use-rope-scaling"] = "";
            a["rope-scaling-factor"] = number(c.llama3_rope_factor);
        }
        if (c.linear_rope_factor > 0)
            a["rotary-seq-len-interpolation-factor"] = std::to_string(c.linear_rope_factor);
        if (c.num_kv_heads != c.num_heads) {
            a["group-query-attention"] = "";
            a["num-query-groups"] = std::to_string(c.num_kv_heads);
        }
        if (c.qkv_bias) a["add-qkv-bias"] = "";
        if (c.qk_norm) a["qk-layernorm"] = "";
        if (c.num_experts > 0) {
            a["num-experts"] = std::to_string(c.num_experts);
            a["moe-router-topk"] = std::to_string(c.experts_per_token);
            a["moe-ffn-hidden-size"] = std::to_string(c.ffn_hidden_size);
            if (c.router_pre_softmax) a["moe-router-pre-softmax"] = "";
        }
    }
    if (c.arch == HfArch::hybrid) {
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
        if (c.num_kv_heads != c.num_heads) {
            a["group-query-attention"] = "";
            a["num-query-groups"] = std::to_string(c.num_kv_heads);
        }
        if (c.num_experts > 0) add_grouped_moe_args(c, a);  // Nemotron-H's MoE layers
    }
    if (c.arch == HfArch::deepseek) {
        const MlaParts& m = c.mla;
        a["multi-latent-attention"] = "";
        if (m.q_lora_rank > 0) a["q-lora-rank"] = std::to_string(m.q_lora_rank);
        a["kv-lora-rank"] = std::to_string(m.kv_lora_rank);
        a["qk-head-dim"] = std::to_string(m.qk_nope_head_dim);
        a["qk-pos-emb-head-dim"] = std::to_string(m.qk_rope_head_dim);
        a["v-head-dim"] = std::to_string(m.v_head_dim);
        a["qk-layernorm"] = "";  // the q and kv latents' RMSNorms
        if (m.yarn_factor > 0) {
            a["rotary-scaling-factor"] = number(m.yarn_factor);
            a["mscale"] = a["mscale-all-dim"] = number(m.yarn_mscale);
            // Megatron's YaRN takes --max-position-embeddings as the original context.
            a["max-position-embeddings"] = a["seq-length"] =
                std::to_string(m.original_max_positions);
        } else {
            a["rope-type"] = "rope";
        }
        if (c.mtp_layers > 0) a["mtp-num-layers"] = std::to_string(c.mtp_layers);
        if (c.num_experts > 0) {
            add_grouped_moe_args(c, a);
            std::string freq = "[";
            for (int64_t i = 0; i < c.num_layers; ++i)
                freq += (i ? "," : "") + std::string(i < m.first_dense_layers ? "0" : "1");
            a["moe-layer-freq"] = freq + "]";
        }
    }
    if (!c.tied) a["untie-embeddings-and-output-weights"] = "";
    return a;
}

CheckpointArgs hf_checkpoint_args(const HfConfig& config) {
    // The store_false flags hf_model_args gives and their argparse dests.
    static const std::map<std::string, std::string> kStoreFalse = {
        {"disable-bias-linear", "add_bias_linear"},
        {"no-bias-gelu-fusion", "bias_gelu_fusion"},
        {"bert-no-binary-head", "bert_binary_head"}};
    CheckpointArgs out;
    for (const auto& [flag, text] : hf_model_args(config)) {
        const std::string name = python_arg_name(flag);
        if (auto dest = kStoreFalse.find(flag); dest != kStoreFalse.end()) {
            out.emplace_back(dest->second, false);
        } else if (text.empty()) {
            out.emplace_back(name, true);
        } else if (flag == "hybrid-override-pattern") {
            out.emplace_back(name, text);       // "---" is a pattern, not a number
        } else if (flag == "moe-layer-freq") {  // "[0,1,1]": the list Megatron's args hold
            std::vector<int64_t> pattern;
            for (char ch : text)
                if (ch == '0' || ch == '1') pattern.push_back(ch - '0');
            out.emplace_back(name, std::move(pattern));
        } else if (text.find_first_not_of("0123456789") == std::string::npos) {
            out.emplace_back(name, int64_t(std::stoll(text)));
        } else if (text.find_first_not_of("0123456789.e+-") == std::string::npos) {
            out.emplace_back(name, std::stod(text));
        } else {
            out.emplace_back(name, text);
        }
    }
    out.emplace_back("padded_vocab_size", config.vocab_size);
    out.emplace_back("params_dtype", std::string("float32"));
    out.emplace_back(kHfModelTypeArg, config.model_type);
    return out;
}

namespace {

// Megatron's args as saving reads them: absent entries take Megatron's defaults, and errors
// name the entry as Python prints it.
class Args {
  public:
    explicit Args(const CheckpointArgs& args) : args_(args) {}

    int64_t integer(const char* name) const {
        const auto v = int_arg(args_, name);
        MT_CHECK(v.has_value(), "--saver hf: the checkpoint's args have no integer ", name);
        return *v;
    }
    int64_t integer(const char* name, int64_t fallback) const {
        return int_arg(args_, name).value_or(fallback);
    }
    double real(const char* name, double fallback) const {
        const ArgValue* v = find_arg(args_, name);
        if (v && std::holds_alternative<double>(*v)) return std::get<double>(*v);
        if (v && std::holds_alternative<int64_t>(*v)) return double(std::get<int64_t>(*v));
        return fallback;
    }
    // A switch: absent or None is `fallback`.
    bool flag(const char* name, bool fallback = false) const {
        const ArgValue* v = find_arg(args_, name);
        if (v && std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
        return fallback;
    }
    std::string text(const char* name, const std::string& fallback) const {
        const ArgValue* v = find_arg(args_, name);
        return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : fallback;
    }
    const ArgValue* find(const char* name) const { return find_arg(args_, name); }
    // True when the entry is set to something other than None, False or 0.
    bool set(const char* name) const {
        const ArgValue* v = find_arg(args_, name);
        if (!v || std::holds_alternative<std::monostate>(*v)) return false;
        if (std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
        if (std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v) != 0;
        return true;
    }

  private:
    const CheckpointArgs& args_;
};

std::string python_repr(bool v) {
    return v ? "True" : "False";
}

[[noreturn]] void not_supported(const std::string& field, const std::string& value,
                                const std::string& why) {
    MT_FAIL("not supported yet: ", field, "=", value, " in --saver hf (", why, ")");
}

// A MoE rope model as Mixtral (with per-head q/k norms: as Qwen3-MoE): every layer a sparse MoE
// block of the experts' FFN size, routed as transformers routes (softmax of the top-k logits, or
// for Qwen3-MoE of all logits; no capacity, no shared experts).
void read_mixtral_args(const Args& a, HfConfig& c) {
    if (!a.set("num_experts")) return;
    // Qwen3-MoE is Mixtral's routing with Qwen3's attention, and may score all experts first.
    const bool qwen = c.qk_norm;
    c.model_type = qwen ? "qwen3_moe" : "mixtral";
    c.num_experts = a.integer("num_experts");
    c.experts_per_token = a.integer("moe_router_topk", 2);
    c.ffn_hidden_size = a.integer("moe_ffn_hidden_size", c.ffn_hidden_size);
    const std::string why =
        qwen ? "Qwen3-MoE's every layer routes each token to the softmax of its router logits, "
               "over experts alone"
             : "Mixtral's every layer routes each token to the softmax of its top-k "
               "router logits, over experts alone";
    if (const ArgValue* freq = a.find("moe_layer_freq")) {
        const bool every = std::holds_alternative<int64_t>(*freq) && std::get<int64_t>(*freq) == 1;
        const auto* list = std::get_if<std::vector<int64_t>>(freq);
        if (!every &&
            !(list && std::all_of(list->begin(), list->end(), [](int64_t f) { return f == 1; })))
            not_supported("moe_layer_freq", "not every layer", why);
    }
    if (a.set("moe_shared_expert_intermediate_size"))
        not_supported("moe_shared_expert_intermediate_size",
                      std::to_string(a.integer("moe_shared_expert_intermediate_size")), why);
    c.router_pre_softmax = a.flag("moe_router_pre_softmax");
    if (c.router_pre_softmax && !qwen) not_supported("moe_router_pre_softmax", "True", why);
    if (a.text("moe_router_score_function", "softmax") != "softmax")
        not_supported("moe_router_score_function", a.text("moe_router_score_function", ""), why);
    if (a.set("moe_router_topk_scaling_factor"))
        not_supported("moe_router_topk_scaling_factor", "set", why);
    if (a.set("moe_router_group_topk")) not_supported("moe_router_group_topk", "set", why);
    if (a.set("moe_expert_capacity_factor"))
        not_supported("moe_expert_capacity_factor", "set", why);
    if (a.text("moe_router_load_balancing_type", "aux_loss") == "sinkhorn")
        not_supported("moe_router_load_balancing_type", "sinkhorn", why);
}

// MoE layers as NemotronHMoE and DeepseekV3MoE route them (GroupedMoe): sigmoid scores with the
// expert bias, groups scored by their top two, shared experts, no capacity; with `softmax`
// allowed, DeepseekV2Moe's too (softmax over every expert, the top k scaled, no groups). `why`
// names the model for a refusal.
void read_grouped_moe_args(const Args& a, HfConfig& c, const std::string& why,
                           bool softmax_allowed = false) {
    GroupedMoe& moe = c.moe;
    c.num_experts = a.integer("num_experts");
    c.experts_per_token = a.integer("moe_router_topk", 2);
    moe.expert_ffn = a.integer("moe_ffn_hidden_size", a.integer("ffn_hidden_size", 0));
    moe.shared_ffn = a.integer("moe_shared_expert_intermediate_size", 0);
    moe.num_groups = a.set("moe_router_num_groups") ? a.integer("moe_router_num_groups") : 1;
    moe.group_topk = a.set("moe_router_group_topk") ? a.integer("moe_router_group_topk") : 1;
    moe.scaling_factor = a.set("moe_router_topk_scaling_factor")
                             ? a.real("moe_router_topk_scaling_factor", 1.0)
                             : 1.0;
    const std::string score = a.text("moe_router_score_function", "softmax");
    moe.softmax = softmax_allowed && score == "softmax";
    if (moe.softmax) {
        // DeepseekV2TopkRouter's greedy routing: all experts' softmax, then the top k.
        if (!a.flag("moe_router_pre_softmax"))
            not_supported("moe_router_pre_softmax", "False",
                          "DeepSeek-V2 takes the top experts of the softmax over all of them");
        const char* greedy = "DeepSeek-V2's greedy routing has neither";
        if (a.flag("moe_router_enable_expert_bias"))
            not_supported("moe_router_enable_expert_bias", "True", greedy);
        if (moe.num_groups > 1)
            not_supported("moe_router_num_groups", std::to_string(moe.num_groups), greedy);
    } else {
        if (score != "sigmoid") not_supported("moe_router_score_function", score, why);
        if (!a.flag("moe_router_enable_expert_bias"))
            not_supported("moe_router_enable_expert_bias", "False", why);
        if (a.set("moe_router_pre_softmax")) not_supported("moe_router_pre_softmax", "set", why);
    }
    if (moe.num_groups > 1 && c.experts_per_token != 2 * moe.group_topk)
        not_supported("moe_router_group_topk", std::to_string(moe.group_topk),
                      "transformers scores an expert group by its top two experts");
    for (const char* name :
         {"moe_shared_expert_gate", "moe_expert_capacity_factor", "moe_use_legacy_grouped_gemm"})
        if (a.set(name)) not_supported(name, "set", why);
}

// A hybrid model's MoE layers as NemotronHMoE routes them: one shared expert always.
void read_nemotron_h_moe_args(const Args& a, HfConfig& c) {
    const std::string why =
        "NemotronHMoE routes each token by sigmoid scores with a correction bias to experts of "
        "relu2 MLPs, beside one ungated shared expert";
    read_grouped_moe_args(a, c, why);
    if (c.moe.shared_ffn <= 0) not_supported("moe_shared_expert_intermediate_size", "None", why);
}

// Megatron's GPT with multi-latent attention as DeepseekV3ForCausalLM: RMSNorm, SwiGLU without
// biases, the q and kv latents normed (--qk-layernorm), YaRN with mscale = mscale_all_dim (or
// --rope-type rope), dense layers then MoE layers routed as DeepseekV3MoE routes, and any
// multi-token prediction layers; the model's positions are YaRN's original ones times its factor.
// MoE layers routed by the softmax over all experts (--moe-router-pre-softmax) make it a
// DeepseekV2ForCausalLM.
HfConfig deepseek_config_from_args(const Args& a) {
    const std::string why =
        "DeepSeek-V3 has RMSNorm, rope, SwiGLU without biases, normed q and kv latents, and "
        "sigmoid-routed MoE layers after its dense ones";
    HfConfig c;
    c.arch = HfArch::deepseek;
    c.model_type = "deepseek_v3";
    c.num_layers = a.integer("num_layers");
    c.hidden_size = a.integer("hidden_size");
    c.num_heads = c.num_kv_heads = a.integer("num_attention_heads");
    c.ffn_hidden_size =
        a.integer("ffn_hidden_size", int64_t(double(4 * c.hidden_size) * 2 / 3 / 64) * 64);
    c.norm_epsilon = a.real("norm_epsilon", 1e-5);
    c.initializer_range = a.real("init_method_std", 0.02);
    c.tied = !a.flag("untie_embeddings_and_output_weights");
    c.rope_theta = a.real("rotary_base", 10000);
    if (a.text("normalization", "LayerNorm") != "RMSNorm")
        not_supported("normalization", a.text("normalization", "LayerNorm"), why);
    if (a.text("position_embedding_type", "learned_absolute") != "rope")
        not_supported("position_embedding_type",
                      a.text("position_embedding_type", "learned_absolute"), why);
    if (!a.flag("swiglu")) not_supported("swiglu", "False", why);
    if (a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "True", why);
    if (!a.flag("qk_layernorm")) not_supported("qk_layernorm", "False", why);
    for (const char* name : {"apply_layernorm_1p", "add_qkv_bias", "window_size"})
        if (a.set(name)) not_supported(name, "set", why);
    c.mtp_layers = a.integer("mtp_num_layers", 0);
    MlaParts& m = c.mla;
    m.q_lora_rank = a.set("q_lora_rank") ? a.integer("q_lora_rank") : 0;
    m.kv_lora_rank = a.integer("kv_lora_rank", 32);
    m.qk_nope_head_dim = a.integer("qk_head_dim", 128);
    m.qk_rope_head_dim = a.integer("qk_pos_emb_head_dim", 64);
    m.v_head_dim = a.integer("v_head_dim", 128);
    c.head_dim = m.v_head_dim;
    const int64_t positions = a.integer("max_position_embeddings", a.integer("seq_length", 0));
    c.max_position_embeddings = positions;
    if (a.text("rope_type", "yarn") == "yarn") {
        m.yarn_factor = a.real("rotary_scaling_factor", 1.0);
        m.yarn_mscale = a.real("mscale", 1.0);
        if (a.real("mscale_all_dim", 1.0) != m.yarn_mscale)
            not_supported("mscale_all_dim", number(a.real("mscale_all_dim", 1.0)),
                          "Megatron's MLA scales the softmax by mscale, transformers' by "
                          "mscale_all_dim: they must be equal");
        m.original_max_positions = positions;
        c.max_position_embeddings = int64_t(std::llround(double(positions) * m.yarn_factor));
    }
    m.first_dense_layers = c.num_layers;
    if (a.set("num_experts")) {
        read_grouped_moe_args(a, c, why, /*softmax_allowed=*/true);
        if (c.moe.softmax) {
            c.model_type = "deepseek_v2";  // its routing
            if (c.mtp_layers > 0)
                not_supported("mtp_num_layers", std::to_string(c.mtp_layers),
                              "DeepSeek-V2 (a softmax-routed DeepSeek) has no multi-token "
                              "prediction layers");
        }
        if (c.moe.shared_ffn % c.moe.expert_ffn != 0)
            not_supported("moe_shared_expert_intermediate_size", std::to_string(c.moe.shared_ffn),
                          "DeepSeek's shared experts are n_shared_experts experts wide");
        // --moe-layer-freq: every layer (1), or dense layers first then MoE ones.
        const ArgValue* freq = a.find("moe_layer_freq");
        std::vector<int64_t> pattern(size_t(c.num_layers), 1);
        if (freq && std::holds_alternative<std::vector<int64_t>>(*freq))
            pattern = std::get<std::vector<int64_t>>(*freq);
        else if (freq && std::holds_alternative<int64_t>(*freq) && std::get<int64_t>(*freq) != 1)
            not_supported("moe_layer_freq", std::to_string(std::get<int64_t>(*freq)), why);
        m.first_dense_layers =
            int64_t(std::find(pattern.begin(), pattern.end(), 1) - pattern.begin());
        if (int64_t(pattern.size()) != c.num_layers ||
            std::find(pattern.begin() + m.first_dense_layers, pattern.end(), 0) != pattern.end())
            not_supported("moe_layer_freq", "a pattern with dense layers after MoE ones", why);
    }
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_heads > 0 && m.kv_lora_rank > 0 &&
                 c.max_position_embeddings > 0,
             "--saver hf: bad sizes in the checkpoint's args of a multi-latent attention model");
    return c;
}

// Megatron's MambaModel as Mamba2ForCausalLM (every layer Mamba, unless the checkpoint came
// from a Nemotron-H folder) or NemotronHForCausalLM.
HfConfig hybrid_config_from_args(const Args& a) {
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
    c.arch = HfArch::hybrid;
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
        not_supported("norm_epsilon", number(c.norm_epsilon),
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

}  // namespace

HfConfig hf_config_from_args(const CheckpointArgs& args, const std::optional<BertParts>& bert) {
    const Args a(args);
    // No Hugging Face architecture normalises queries and keys by their RMS alone (Llama 4's
    // folders are not written here).
    if (a.flag("qk_l2_norm"))
        not_supported("qk_l2_norm", "True", "no exported model_type has L2-normalised queries");
    if (megatron_mamba_model(args)) return hybrid_config_from_args(a);
    if (!bert && a.flag("multi_latent_attention")) return deepseek_config_from_args(a);
    // Model features no exported model_type has, whichever the architecture.
    for (const char* name :
         {"apply_layernorm_1p", "squared_relu", "multi_latent_attention", "window_size"})
        if (a.set(name)) {
            const ArgValue* v = find_arg(args, name);
            not_supported(name,
                          std::holds_alternative<int64_t>(*v)
                              ? std::to_string(std::get<int64_t>(*v))
                          : std::holds_alternative<bool>(*v) ? python_repr(std::get<bool>(*v))
                                                             : std::string("set"),
                          "GPT-2, Llama, Mistral, Qwen and BERT have no such feature");
        }

    HfConfig c;
    c.num_layers = a.integer("num_layers");
    c.hidden_size = a.integer("hidden_size");
    c.num_heads = a.integer("num_attention_heads");
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_heads > 0,
             "--saver hf: num_layers, hidden_size and num_attention_heads must be positive");
    c.head_dim = a.integer("kv_channels", c.hidden_size / c.num_heads);
    c.num_kv_heads =
        a.flag("group_query_attention") ? a.integer("num_query_groups", 1) : c.num_heads;
    const bool swiglu = a.flag("swiglu");
    c.ffn_hidden_size =
        a.integer("ffn_hidden_size", swiglu ? int64_t(double(4 * c.hidden_size) * 2 / 3 / 64) * 64
                                            : 4 * c.hidden_size);
    c.max_position_embeddings = a.integer("max_position_embeddings", a.integer("seq_length", 0));
    MT_CHECK(c.max_position_embeddings > 0,
             "--saver hf: the checkpoint's args have no max_position_embeddings or seq_length");
    // Megatron-LM before core_v0.7 called it layernorm_epsilon.
    c.norm_epsilon = a.real("norm_epsilon", a.real("layernorm_epsilon", 1e-5));
    c.initializer_range = a.real("init_method_std", 0.02);
    c.tied = !a.flag("untie_embeddings_and_output_weights");
    const std::string position = a.text("position_embedding_type", "learned_absolute");
    const std::string norm = a.text("normalization", "LayerNorm");
    const bool bias = a.flag("add_bias_linear", true);

    if (a.set("num_experts") && position != "rope")
        not_supported("num_experts", std::to_string(a.integer("num_experts")),
                      "mixture-of-experts models are exported as Mixtral (rope, RMSNorm, SwiGLU)");
    if (bert) {
        c.arch = HfArch::bert;
        c.model_type = bert->post_layer_norm ? "bert" : "megatron-bert";
        c.bert = *bert;
        const std::string why =
            "BERT is exported as megatron-bert or bert: learned absolute positions, LayerNorm, "
            "the erf GeLU, linear biases";
        if (position != "learned_absolute") not_supported("position_embedding_type", position, why);
        if (norm != "LayerNorm") not_supported("normalization", norm, why);
        if (swiglu) not_supported("swiglu", "True", why);
        if (!bias) not_supported("add_bias_linear", "False", why);
        if (a.flag("qk_layernorm")) not_supported("qk_layernorm", "True", why);
        if (c.num_kv_heads != c.num_heads)
            not_supported("num_query_groups", std::to_string(c.num_kv_heads),
                          "BERT has no grouped-query attention");
        if (c.head_dim * c.num_heads != c.hidden_size)
            not_supported("kv_channels", std::to_string(c.head_dim),
                          "BERT's heads are hidden_size / num_attention_heads wide");
        if (a.flag("bias_gelu_fusion", true))
            not_supported("bias_gelu_fusion", "True",
                          "Megatron's fused bias-GeLU is the tanh form while its BertLMHead "
                          "applies the erf GeLU, and transformers' BERT has one "
                          "hidden_act for both: train with --no-bias-gelu-fusion");
    } else if (position == "learned_absolute") {
        c.arch = HfArch::gpt2;
        c.model_type = "gpt2";
        const std::string why =
            "learned absolute positions are exported as GPT-2: LayerNorm, "
            "GeLU, linear biases, tied embeddings";
        if (norm != "LayerNorm") not_supported("normalization", norm, why);
        if (swiglu) not_supported("swiglu", "True", why);
        if (!bias) not_supported("add_bias_linear", "False", why);
        if (!c.tied) not_supported("untie_embeddings_and_output_weights", "True", why);
        if (a.flag("qk_layernorm")) not_supported("qk_layernorm", "True", why);
        if (c.num_kv_heads != c.num_heads)
            not_supported("num_query_groups", std::to_string(c.num_kv_heads),
                          "GPT-2 has no grouped-query attention");
        if (c.head_dim * c.num_heads != c.hidden_size)
            not_supported("kv_channels", std::to_string(c.head_dim),
                          "GPT-2's heads are hidden_size / num_attention_heads wide");
        // Megatron's GeLU with biases is the fused tanh form, GPT-2's gelu_new.
        if (!a.flag("bias_gelu_fusion", true))
            not_supported("bias_gelu_fusion", "False", "GPT-2's GeLU is the tanh form");
    } else if (position == "rope") {
        c.arch = HfArch::llama;
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
        if (norm != "RMSNorm") not_supported("normalization", norm, why);
        if (!swiglu) not_supported("swiglu", "False", why);
        if (bias) not_supported("add_bias_linear", "True", why);
        if (c.qkv_bias && c.qk_norm) not_supported("qk_layernorm", "True", why);
        if (a.flag("rotary_interleaved"))
            not_supported("rotary_interleaved", "True", "Llama rotates halves, not pairs");
        if (a.flag("use_rope_scaling")) c.llama3_rope_factor = a.real("rope_scaling_factor", 8.0);
        c.linear_rope_factor = a.integer("rotary_seq_len_interpolation_factor", 0);
        const double percent = a.real("rotary_percent", 1.0);
        if (percent != 1.0)
            not_supported("rotary_percent", number(percent), "Llama rotates whole heads");
        c.rope_theta = a.real("rotary_base", 10000);
        if (a.set("num_experts") && c.qkv_bias)
            not_supported("add_qkv_bias", "True",
                          "mixture-of-experts models are exported as Mixtral or Qwen3-MoE, which "
                          "have no QKV biases");
        read_mixtral_args(a, c);
    } else {
        not_supported("position_embedding_type", position,
                      "supported are learned_absolute (GPT-2) and rope (Llama, Mistral)");
    }
    MT_CHECK(c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0 && c.head_dim > 0 &&
                 c.ffn_hidden_size > 0,
             "--saver hf: bad sizes in the checkpoint's args: ", c.num_heads, " heads in ",
             c.num_kv_heads, " query groups of ", c.head_dim, ", ffn ", c.ffn_hidden_size);
    return c;
}

}  // namespace mt::plugins::hf
