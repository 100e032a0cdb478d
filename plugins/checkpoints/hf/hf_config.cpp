#include "hf_config.h"

#include <simdjson.h>

#include <map>
#include <sstream>

#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_saver_args.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/text/python_repr.h"

namespace mt::plugins::hf {

void read_attention_heads(const ConfigJson& j, HfConfig& c) {
    c.num_heads = j.integer("num_attention_heads");
    c.num_kv_heads = j.integer("num_key_value_heads", c.num_heads);
    MT_CHECK(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0, j.where(),
             ": 'num_attention_heads' (", c.num_heads,
             ") must be a positive multiple of 'num_key_value_heads' (", c.num_kv_heads, ")");
    c.head_dim = j.integer("head_dim", c.hidden_size / c.num_heads);
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
    const ConfigJson j(object, where);
    HfConfig c;
    c.model_type = j.text("model_type", "");
    c.arch = hf_architecture_of(c.model_type);
    if (!c.arch) {
        std::string supported;
        for (const HfArchitecture* arch : hf_architectures())
            if (arch->supported())
                for (const std::string& type : arch->model_types())
                    supported += (supported.empty() ? "" : ", ") + type;
        MT_FAIL(where, ": not supported yet: 'model_type' '", c.model_type.substr(0, 64),
                "' (supported are ", supported, ")");
    }
    c.arch->read_config(j, dir, c);
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.ffn_hidden_size > 0 && c.vocab_size > 0 &&
                 c.max_position_embeddings > 0 && c.head_dim > 0,
             where, ": layers, sizes, vocabulary and positions must be positive");
    return c;
}

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
                   {"norm-epsilon", number_text(c.norm_epsilon)},
                   {"attention-dropout", "0"},
                   {"hidden-dropout", "0"}};
    if (c.num_kv_heads != c.num_heads) {
        a["group-query-attention"] = "";
        a["num-query-groups"] = std::to_string(c.num_kv_heads);
    }
    c.arch->add_model_args(c, a);
    if (!c.tied) a["untie-embeddings-and-output-weights"] = "";
    return a;
}

CheckpointArgs hf_checkpoint_args(const HfConfig& config) {
    // The store_false flags hf_model_args gives and their argparse dests.
    static const std::map<std::string, std::string> kStoreFalse = {
        {"disable-bias-linear", "add_bias_linear"},
        {"no-bias-gelu-fusion", "bias_gelu_fusion"},
        {"bert-no-binary-head", "bert_binary_head"},
        {"no-yarn-correction-range-round-to-int", "yarn_correction_range_round_to_int"}};
    CheckpointArgs out;
    for (const auto& [flag, text] : hf_model_args(config)) {
        const std::string name = python_arg_name(flag);
        if (auto dest = kStoreFalse.find(flag); dest != kStoreFalse.end()) {
            out.emplace_back(dest->second, false);
        } else if (text.empty()) {
            out.emplace_back(name, true);
        } else if (flag == "hybrid-override-pattern") {
            out.emplace_back(name, text);  // "---" is a pattern, not a number
        } else if (flag == "moe-layer-freq" || flag == "window-attn-skip-freq" ||
                   flag == "window-size") {
            // "[0,1,1]", "(2, 0)": the lists and tuples Megatron's args hold
            std::vector<int64_t> values;
            std::istringstream words(text);
            for (std::string word; std::getline(words, word, ',');)
                values.push_back(std::stoll(word.substr(word.find_first_of("-0123456789"))));
            out.emplace_back(name, std::move(values));
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

void not_supported(const std::string& field, const std::string& value, const std::string& why) {
    MT_FAIL("not supported yet: ", field, "=", value, " in --saver hf (", why, ")");
}

HfConfig transformer_config_from_args(const SaverArgs& a) {
    // Model features none of these families has (GPT-OSS's are its own description's).
    for (const char* name : {"apply_layernorm_1p", "squared_relu", "multi_latent_attention",
                             "quick_geglu", "activation_func_clamp_value"})
        if (a.set(name)) {
            const ArgValue* v = a.find(name);
            not_supported(name,
                          std::holds_alternative<int64_t>(*v)
                              ? std::to_string(std::get<int64_t>(*v))
                          : std::holds_alternative<bool>(*v) ? text::python_bool(std::get<bool>(*v))
                                                             : std::string("set"),
                          "GPT-2, Llama, Mistral, Qwen and BERT have no such feature");
        }
    if (a.real("glu_linear_offset", 0) != 0)
        not_supported("glu_linear_offset", number_text(a.real("glu_linear_offset", 0)),
                      "GPT-2, Llama, Mistral, Qwen and BERT have no such feature");
    if (a.text("softmax_type", "vanilla") != "vanilla")
        not_supported("softmax_type", a.text("softmax_type", ""),
                      "GPT-2, Llama, Mistral, Qwen and BERT have no attention sinks");
    // Megatron-DeepSpeed's args (expert_interval, a num_experts list): DeepSpeed's MoE layers.
    if (a.set("expert_interval") && a.find("num_experts") &&
        std::holds_alternative<std::vector<int64_t>>(*a.find("num_experts")))
        not_supported("num_experts", "a list (Megatron-DeepSpeed's MoE layers)",
                      "no transformers architecture has DeepSpeed's gate, its expert interval or "
                      "PR-MoE");
    if (a.set("num_experts") && a.text("position_embedding_type", "learned_absolute") != "rope")
        not_supported("num_experts", std::to_string(a.integer("num_experts")),
                      "mixture-of-experts models are exported as Mixtral (rope, RMSNorm, SwiGLU)");
    return transformer_sizes_from_args(a);
}

HfConfig transformer_sizes_from_args(const SaverArgs& a) {
    HfConfig c;
    c.num_layers = a.integer("num_layers");
    c.hidden_size = a.integer("hidden_size");
    c.num_heads = a.integer("num_attention_heads");
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_heads > 0,
             "--saver hf: num_layers, hidden_size and num_attention_heads must be positive");
    c.head_dim = a.integer("kv_channels", c.hidden_size / c.num_heads);
    c.num_kv_heads =
        a.flag("group_query_attention") ? a.integer("num_query_groups", 1) : c.num_heads;
    c.ffn_hidden_size = a.integer(
        "ffn_hidden_size", a.flag("swiglu") ? int64_t(double(4 * c.hidden_size) * 2 / 3 / 64) * 64
                                            : 4 * c.hidden_size);
    c.max_position_embeddings = a.integer("max_position_embeddings", a.integer("seq_length", 0));
    MT_CHECK(c.max_position_embeddings > 0,
             "--saver hf: the checkpoint's args have no max_position_embeddings or seq_length");
    // Megatron-LM before core_v0.7 called it layernorm_epsilon.
    c.norm_epsilon = a.real("norm_epsilon", a.real("layernorm_epsilon", 1e-5));
    c.initializer_range = a.real("init_method_std", 0.02);
    c.tied = !a.flag("untie_embeddings_and_output_weights");
    return c;
}

void refuse_unless_gpt2_layers(const SaverArgs& a, const HfConfig& c, const std::string& model,
                               const std::string& why) {
    const std::string norm = a.text("normalization", "LayerNorm");
    if (norm != "LayerNorm") not_supported("normalization", norm, why);
    if (a.flag("swiglu")) not_supported("swiglu", "True", why);
    if (!a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "False", why);
    if (a.flag("qk_layernorm")) not_supported("qk_layernorm", "True", why);
    if (a.set("window_size")) not_supported("window_size", "set", model + " has no sliding window");
    if (c.num_kv_heads != c.num_heads)
        not_supported("num_query_groups", std::to_string(c.num_kv_heads),
                      model + " has no grouped-query attention");
    if (c.head_dim * c.num_heads != c.hidden_size)
        not_supported("kv_channels", std::to_string(c.head_dim),
                      model + "'s heads are hidden_size / num_attention_heads wide");
}

HfConfig hf_config_from_args(const CheckpointArgs& args, const std::optional<BertParts>& bert) {
    const SaverArgs a(args);
    // No Hugging Face architecture normalises queries and keys by their RMS alone (Llama 4's
    // folders are not written here).
    if (a.flag("qk_l2_norm"))
        not_supported("qk_l2_norm", "True", "no exported model_type has L2-normalised queries");
    if (!bert && a.flag("apply_residual_connection_post_layernorm"))
        not_supported("apply_residual_connection_post_layernorm", "True",
                      "of the exported model_types only BERT's bert adds its residuals after the "
                      "LayerNorms");
    for (const HfArchitecture* arch : hf_architectures()) {
        if (!arch->exports(a, bert)) continue;
        HfConfig c = arch->config_from_args(a, bert);
        c.arch = arch;
        MT_CHECK(c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0 && c.head_dim > 0 &&
                     c.ffn_hidden_size > 0,
                 "--saver hf: bad sizes in the checkpoint's args: ", c.num_heads, " heads in ",
                 c.num_kv_heads, " query groups of ", c.head_dim, ", ffn ", c.ffn_hidden_size);
        return c;
    }
    not_supported("position_embedding_type", a.text("position_embedding_type", "learned_absolute"),
                  "supported are learned_absolute (GPT-2) and rope (Llama, Mistral, Qwen), "
                  "multi-latent attention (DeepSeek) and Mamba models (Mamba-2, Nemotron-H)");
}

}  // namespace mt::plugins::hf
