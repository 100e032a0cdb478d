#include "torch_names.h"

#include "mt/checkpoint/reshard.h"
#include "mt/error.h"

namespace mt::plugins::torch_ckpt {

namespace {

using io::PyKind;
using io::PyValue;

// Legacy layer-module names and their Megatron-core (local spec) equivalents.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {".input_norm.", ".input_layernorm."},
    {".self_attention.query_key_value.", ".self_attention.linear_qkv."},
    {".self_attention.dense.", ".self_attention.linear_proj."},
    {".post_attention_norm.", ".pre_mlp_layernorm."},
    {".mlp.dense_h_to_4h.", ".mlp.linear_fc1."},
    {".mlp.dense_4h_to_h.", ".mlp.linear_fc2."},
};

// Top-level legacy names (after the encoder's "layers.N" are handled).
constexpr std::pair<const char*, const char*> kTopNames[] = {
    {"language_model.embedding.", "embedding."},
    {"language_model.encoder.final_norm.", "decoder.final_layernorm."},
    {"language_model.output_layer.", "output_layer."},
    {"word_embeddings_for_head.", "output_layer."},
};

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

std::string legacy_to_core(const std::string& legacy) {
    const std::string name = modernize(legacy);
    const std::string layers = "language_model.encoder.layers.";
    if (name.rfind(layers, 0) == 0) {
        std::string core = "decoder.layers." + name.substr(layers.size());
        for (const auto& [from, to] : kLayerNames) replace_all(core, from, to);
        return core;
    }
    for (const auto& [from, to] : kTopNames)
        if (name.rfind(from, 0) == 0) return to + name.substr(std::string(from).size());
    return legacy;  // not a GPT parameter: the caller reports it
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
    ModelTensors out;
    for (const auto& [key, v] : flat) {
        // Transformer Engine's _extra_state (bytes, None or uint8 tensors) carries no weights.
        if (key.ends_with("._extra_state") || v->kind() != PyKind::tensor) continue;
        out.emplace_back(legacy ? legacy_to_core(key) : key, v->as_tensor());
    }
    return out;
}

PyValue legacy_model_to_py(const ModelTensors& tensors, bool untied) {
    PyValue root = PyValue::dict();
    for (const auto& [core_name, t] : tensors) {
        std::string name = core_name;
        if (name.find("layer_norm_") != std::string::npos) name = other_impl_name(name);
        const PyValue tensor = PyValue::tensor(t);
        if (name.rfind("decoder.layers.", 0) == 0) {
            std::string key = name.substr(std::string("decoder.").size());
            for (const auto& [legacy, core] : kLayerNames) replace_all(key, core, legacy);
            set_new(child(child(root, "language_model"), "encoder", true), key, tensor, core_name);
        } else if (name.rfind("decoder.final_layernorm.", 0) == 0) {
            set_new(child(child(root, "language_model"), "encoder", true),
                    "final_norm." + name.substr(std::string("decoder.final_layernorm.").size()),
                    tensor, core_name);
        } else if (name.rfind("embedding.", 0) == 0) {
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
            MT_FAIL("no legacy-model name for '", core_name, "'");
        }
    }
    return root;
}

}  // namespace mt::plugins::torch_ckpt
