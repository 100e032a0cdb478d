#include "torch_names.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <tuple>

#include "mt/checkpoint/reshard.h"
#include "mt/error.h"

namespace mt::plugins::torch_ckpt {

namespace {

using io::PyKind;
using io::PyValue;

// Legacy layer-module names and their Megatron-core (local spec) equivalents, in the order the
// legacy layer registers them; Megatron-DeepSpeed's MoE layers (DeepSpeed's MoE module: its
// gate, its experts, PR-MoE's MLP, then its coefficient, named alike) hold MLPs too.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {".input_norm.", ".input_layernorm."},
    {".self_attention.query_key_value.", ".self_attention.linear_qkv."},
    {".self_attention.dense.", ".self_attention.linear_proj."},
    {".post_attention_norm.", ".pre_mlp_layernorm."},
    {".mlp.deepspeed_moe.gate.wg.", ".mlp.router."},
    {".mlp.deepspeed_moe.experts.deepspeed_experts.", ".mlp.experts.local_experts."},
    {".mlp.mlp.", ".mlp.residual_mlp."},
    {".dense_h_to_4h.", ".linear_fc1."},
    {".dense_4h_to_h.", ".linear_fc2."},
};

// Top-level legacy names (after the encoder's "layers.N" and the final norm are handled).
constexpr std::pair<const char*, const char*> kTopNames[] = {
    {"language_model.embedding.", "embedding."},
    {"language_model.output_layer.", "output_layer."},
    {"word_embeddings_for_head.", "output_layer."},
};

// Where BERT's modules after the encoder live in a legacy model (legacy/model/bert_model.py,
// classification.py, multiple_choice.py): Megatron-core's name (prefix) -> the dicts holding it
// and its key (prefix) in the last one, whose state dict is flat (Module.state_dict). The LM
// head's bias is the core output layer's; its LayerNorm is "norm" ("layernorm" before).
struct HeadPlace {
    const char* core;
    std::vector<const char*> dicts;
    const char* key;
};
const std::vector<HeadPlace>& bert_heads() {
    static const std::vector<HeadPlace> kPlaces = {
        {"pooler.", {"language_model", "pooler"}, ""},
        {"output_layer.bias", {"lm_head"}, "bias"},
        {"lm_head.dense.", {"lm_head"}, "dense."},
        {"lm_head.layer_norm.", {"lm_head"}, "norm."},
        {"binary_head.", {"binary_head"}, ""},
        {"classification_head.", {"classification_head"}, ""},
        {"multichoice_head.", {"multichoice_head"}, ""},
    };
    return kPlaces;
}

// A place's flattened legacy prefix: "language_model.pooler.", "lm_head.bias".
std::string legacy_prefix(const HeadPlace& p) {
    std::string out;
    for (const char* d : p.dicts) out += std::string(d) + ".";
    return out + p.key;
}

// The transformer block of a family's core names: GPT's decoder, BERT's encoder.
std::string block_of(bool bert) {
    return bert ? "encoder." : "decoder.";
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

// Megatron's backward-compatible renames of older legacy checkpoints (checkpointing.py).
std::string modernize(std::string name) {
    if (name.rfind("language_model.transformer.", 0) == 0)
        name.replace(0, std::string("language_model.transformer").size(), "language_model.encoder");
    replace_all(name, ".attention.", ".self_attention.");
    replace_all(name, "layernorm", "norm");
    return name;
}

std::string legacy_to_core(const std::string& legacy, bool bert) {
    const std::string name = modernize(legacy);
    const std::string layers = "language_model.encoder.layers.";
    const std::string final_norm = "language_model.encoder.final_norm.";
    if (name.starts_with(layers)) {
        std::string core = block_of(bert) + "layers." + name.substr(layers.size());
        for (const auto& [from, to] : kLayerNames) replace_all(core, from, to);
        return core;
    }
    if (name.starts_with(final_norm))
        return block_of(bert) + "final_layernorm." + name.substr(final_norm.size());
    for (const auto& [from, to] : kTopNames)
        if (name.starts_with(from)) return to + name.substr(std::string(from).size());
    if (bert)
        for (const HeadPlace& p : bert_heads())
            if (const std::string from = legacy_prefix(p); name.starts_with(from))
                return p.core + name.substr(from.size());
    return legacy;  // not a parameter of the model: the caller reports it
}

// A core name with the local spec's norm names (input_layernorm, pre_mlp_layernorm), which the
// legacy models' names follow, for either --transformer-impl's.
std::string local_norm_name(const std::string& name) {
    return name.find("layer_norm_") != std::string::npos ? other_impl_name(name) : name;
}

// A legacy BERT (or one of its task models) has heads that GPT's legacy model has not.
bool legacy_bert(const PyValue& model) {
    const PyValue* lm = model.find("language_model");
    if (lm && lm->kind() == PyKind::dict && lm->find("pooler")) return true;
    for (const char* head : {"lm_head", "binary_head", "classification_head", "multichoice_head"})
        if (model.find(head)) return true;
    return false;
}

// Where a legacy model's state dict (legacy_model_to_py) lists a core name: language_model's
// embedding, encoder (layer by layer, each layer's modules as ParallelTransformerLayer
// registers them: kLayerNames' order), pooler and output layer, then the LM head (its bias
// first, a parameter of BertLMHead itself), the binary or task head, and the tied copy of the
// word embeddings; as the legacy modules register their parameters.
std::tuple<int, int64_t, size_t> legacy_position(const std::string& core_name) {
    const std::string name = local_norm_name(core_name);
    for (const char* block : {"decoder.layers.", "encoder.layers."}) {
        if (!name.starts_with(block)) continue;
        const std::string rest = name.substr(std::string(block).size());
        size_t module = 0;
        while (module < std::size(kLayerNames) &&
               rest.find(kLayerNames[module].second) == std::string::npos)
            ++module;
        return {1, std::stoll(rest), module};
    }
    const int section = name.starts_with("embedding.")                                 ? 0
                        : name.starts_with("decoder.") || name.starts_with("encoder.") ? 1
                        : name.starts_with("pooler.")                                  ? 2
                        : name == "output_layer.weight"                                ? 3
                        : name == "output_layer.bias"                                  ? 4
                        : name.starts_with("lm_head.")                                 ? 5
                                                                                       : 6;
    // The final norm after every layer.
    return {section, section == 1 ? std::numeric_limits<int64_t>::max() : 0, 0};
}

// Flattens nested dicts into "a.b.c" keys.
void flatten(const PyValue& dict, const std::string& prefix,
             std::vector<std::pair<std::string, const PyValue*>>& out) {
    for (const auto& [k, v] : dict.dict_ref().items) {
        const std::string key = prefix + k.as_string();
        if (v.kind() == PyKind::dict)
            flatten(v, key + ".", out);
        else
            out.emplace_back(key, &v);
    }
}

// Sets a tensor that no other tensor of the model has claimed.
void set_new(PyValue& dict, const std::string& key, const PyValue& tensor,
             const std::string& core_name) {
    MT_CHECK(!dict.dict_ref().find(key), "'", core_name,
             "' and another tensor both map to the "
             "legacy key '",
             key, "'");
    dict.dict_ref().set(key, tensor);
}

PyValue& child(PyValue& dict, const std::string& key, bool ordered = false) {
    if (!dict.dict_ref().find(key)) dict.dict_ref().set(key, PyValue::dict(ordered));
    for (auto& [k, v] : dict.dict_ref().items)
        if (k.kind() == PyKind::string && k.as_string() == key) return v;
    MT_FAIL("unreachable: no '", key, "' after inserting it");
}

}  // namespace

ModelTensors model_from_py(const PyValue& model, const std::string& file) {
    MT_CHECK(model.kind() == PyKind::dict, file, ": 'model' is a Python ",
             io::py_kind_name(model.kind()), ", not a state dict");
    std::vector<std::pair<std::string, const PyValue*>> flat;
    flatten(model, "", flat);
    const bool legacy = model.find("language_model") != nullptr;
    const bool bert = legacy && legacy_bert(model);
    // A stage that holds the embedding uses it as the tied head and ignores a copy of it beside
    // (legacy GPTModel.load_state_dict reads word_embeddings_for_head only on a stage without
    // the embedding); Megatron-DeepSpeed's deepspeed_to_megatron.py writes the copy on every
    // last stage, the first one included.
    bool has_embedding = false;
    for (const auto& [key, v] : flat)
        has_embedding = has_embedding || key == "language_model.embedding.word_embeddings.weight";
    ModelTensors out;
    for (const auto& [key, v] : flat) {
        // Transformer Engine's _extra_state (bytes, None or uint8 tensors) carries no weights.
        if (key.ends_with("._extra_state") || v->kind() != PyKind::tensor) continue;
        if (legacy && has_embedding && key.starts_with("word_embeddings_for_head.")) continue;
        out.emplace_back(legacy ? legacy_to_core(key, bert) : key, v->as_tensor());
    }
    return out;
}

void fix_qkv_ordering(ModelTensors& tensors, double checkpoint_version,
                      std::optional<int64_t> head_dim, const std::string& file) {
    if (checkpoint_version >= 2.0) return;
    MT_CHECK(checkpoint_version == 0.0 || checkpoint_version == 1.0, file,
             ": invalid checkpoint_version ", checkpoint_version);
    for (auto& [name, t] : tensors) {
        if (!name.ends_with(".self_attention.linear_qkv.weight") &&
            !name.ends_with(".self_attention.linear_qkv.bias"))
            continue;
        MT_CHECK(head_dim.has_value() && *head_dim > 0, file, ": checkpoint_version ",
                 checkpoint_version,
                 " stores QKV in an order before Megatron's 2.0, and reordering it needs the "
                 "head size, which the checkpoint's args do not give (kv_channels, or "
                 "hidden_size and num_attention_heads)");
        const int64_t rows = t.shape().at(0);
        MT_CHECK(rows % (3 * *head_dim) == 0, file, ": '", name, "' ", t.describe(),
                 " does not hold 3 x heads of ", *head_dim, " rows");
        const int64_t heads = rows / (3 * *head_dim);
        Shape grouped =
            checkpoint_version == 0.0 ? Shape{3, heads, *head_dim} : Shape{heads, *head_dim, 3};
        grouped.insert(grouped.end(), t.shape().begin() + 1, t.shape().end());
        const Tensor v = t.contiguous().view(grouped);
        // [3, np, hn] -> [np, 3, hn]; [np, hn, 3] -> [np, 3, hn].
        t = (checkpoint_version == 0.0 ? v.transpose(0, 1) : v.transpose(1, 2))
                .contiguous()
                .view(t.shape());
    }
}

PyValue legacy_model_to_py(const ModelTensors& tensors, bool untied) {
    const bool bert = std::any_of(tensors.begin(), tensors.end(),
                                  [](const auto& t) { return t.first.starts_with("encoder."); });
    const std::string block = block_of(bert);
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return legacy_position(tensors[a].first) < legacy_position(tensors[b].first);
    });
    PyValue root = PyValue::dict();
    for (size_t i : order) {
        const auto& [core_name, t] = tensors[i];
        const std::string name = local_norm_name(core_name);
        const PyValue tensor = PyValue::tensor(t);
        if (name.starts_with(block + "layers.")) {
            std::string key = name.substr(block.size());
            for (const auto& [legacy, core] : kLayerNames) replace_all(key, core, legacy);
            set_new(child(child(root, "language_model"), "encoder", true), key, tensor, core_name);
        } else if (name.starts_with(block + "final_layernorm.")) {
            set_new(child(child(root, "language_model"), "encoder", true),
                    "final_norm." + name.substr((block + "final_layernorm.").size()), tensor,
                    core_name);
        } else if (name.starts_with("embedding.")) {
            const std::string rest = name.substr(std::string("embedding.").size());
            const size_t dot = rest.find('.');
            MT_CHECK(dot != std::string::npos, "no legacy name for '", core_name, "'");
            set_new(child(child(child(root, "language_model"), "embedding"), rest.substr(0, dot)),
                    rest.substr(dot + 1), tensor, core_name);
        } else if (name == "output_layer.weight") {
            PyValue& head = untied ? child(child(root, "language_model"), "output_layer")
                                   : child(root, "word_embeddings_for_head");
            set_new(head, "weight", tensor, core_name);
        } else {
            auto place = std::find_if(bert_heads().begin(), bert_heads().end(),
                                      [&](const HeadPlace& p) { return name.starts_with(p.core); });
            MT_CHECK(bert && place != bert_heads().end(), "no legacy-model name for '", core_name,
                     "'");
            PyValue* dict = &root;
            for (size_t d = 0; d < place->dicts.size(); ++d)
                dict = &child(*dict, place->dicts[d], d + 1 == place->dicts.size());
            set_new(*dict, place->key + name.substr(std::string(place->core).size()), tensor,
                    core_name);
        }
    }
    return root;
}

}  // namespace mt::plugins::torch_ckpt
