#include "deepspeed_universal.h"

#include "deepspeed_checkpoint.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;
using io::PyKind;
using io::PyValue;

namespace {

// Where a DeepSpeed name goes in the legacy model, and its place in the model's order (the
// embedding, the transformer layers by their number, the final norm, the output layer).
struct Legacy {
    std::tuple<int, int64_t> place;
    std::string name;  // the legacy flat name
};

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The pipeline module's names ("tied_modules.embed.<key>", "<LL>.<key>") and the module's own
// (--no-pipeline-parallel: "language_model....", maybe under "module.").
Legacy legacy_of(std::string name, const std::string& what) {
    if (name.rfind("module.", 0) == 0) name = name.substr(7);
    if (name.rfind("language_model.", 0) == 0) {
        const int section = name.rfind("language_model.embedding.", 0) == 0        ? 0
                            : name.rfind("language_model.encoder.layers.", 0) == 0 ? 1
                            : name.rfind("language_model.encoder.", 0) == 0        ? 2
                                                                                   : 3;
        return {{section, 0}, name};
    }
    if (name.rfind("tied_modules.embed.", 0) == 0)
        return {{0, 0}, "language_model.embedding." + name.substr(19)};
    const size_t dot = name.find('.');
    const std::string layer = name.substr(0, dot),
                      key = dot == std::string::npos ? "" : name.substr(dot + 1);
    MT_CHECK(all_digits(layer) && layer.size() < 9 && !key.empty(), what,
             ": not a Megatron-DeepSpeed parameter name: '", name.substr(0, 200), "'");
    const int64_t index = std::stoll(layer);
    if (key == "word_embeddings.weight" || key == "position_embeddings.weight")
        return {{0, 0}, "language_model.embedding." + key};
    if (key == "lm_head.weight") return {{3, 0}, "language_model.output_layer.weight"};
    if (key == "weight" || key == "bias")
        return {{2, 0}, "language_model.encoder.final_layernorm." + key};
    return {{1, index}, key};  // a transformer layer's: numbered below
}

// A transformer layer's parameter named by the pipeline module ("<LL>.<key>"), whose legacy name
// waits for the layer's index among the layers.
bool pipeline_layer(const Legacy& l) {
    return std::get<0>(l.place) == 1 && l.name.rfind("language_model.", 0) != 0;
}

// Puts `t` at legacy flat `name` in the nested legacy model.
void place(PyValue& model, const std::string& name, const PyValue& t) {
    auto child = [](PyValue& d, const std::string& key) -> PyValue& {
        if (!d.find(key)) d.dict_ref().set(key, PyValue::dict(true));
        for (auto& [k, v] : d.dict_ref().items)
            if (k.kind() == PyKind::string && k.as_string() == key) return v;
        MT_FAIL("unreachable: '", key, "' was just set");
    };
    PyValue& lm = child(model, "language_model");
    const std::string encoder = "language_model.encoder.", embedding = "language_model.embedding.";
    if (name.rfind(encoder, 0) == 0) {
        child(lm, "encoder").dict_ref().set(name.substr(encoder.size()), t);
    } else if (name.rfind(embedding, 0) == 0) {
        const std::string rest = name.substr(embedding.size());
        const size_t dot = rest.find('.');
        child(child(lm, "embedding"), rest.substr(0, dot)).dict_ref().set(rest.substr(dot + 1), t);
    } else {
        MT_CHECK(name == "language_model.output_layer.weight",
                 "not supported yet: the universal checkpoint's parameter '", name.substr(0, 200),
                 "'");
        child(lm, "output_layer").dict_ref().set("weight", t);
    }
}

const Tensor& tensor_in(const PyValue& v, const fs::path& file) {
    const PyValue& t = v.kind() == PyKind::dict ? v["param"] : v;
    MT_CHECK(t.kind() == PyKind::tensor, file.string(), ": no tensor");
    return t.as_tensor();
}

}  // namespace

bool is_universal(const fs::path& tag) {
    return fs::is_regular_file(tag / "zero" / "optimizer_state.pt");
}

UniversalState read_universal(const fs::path& tag, int64_t padded_vocab_size, DType dtype) {
    // Each model-parallel rank's parameter names by group (a tied copy listed again: once).
    std::vector<std::vector<std::string>> group_names;
    std::set<std::string> seen;
    for (int mp = 0;; ++mp) {
        char name[64];
        std::snprintf(name, sizeof name, "mp_rank_%02d_model_states.pt", mp);
        if (!fs::exists(tag / name)) break;
        const PyValue shapes = read_deepspeed_file(tag / name)["param_shapes"];
        MT_CHECK(shapes.kind() == PyKind::list, (tag / name).string(),
                 ": param_shapes is not a list of param groups");
        group_names.resize(std::max(group_names.size(), shapes.items().size()));
        for (size_t g = 0; g < shapes.items().size(); ++g)
            for (const auto& [k, v] : shapes.items()[g].dict_ref().items)
                if (seen.insert(k.as_string()).second) group_names[g].push_back(k.as_string());
    }
    const fs::path settings_file = tag / "zero" / "optimizer_state.pt";
    const PyValue settings = read_deepspeed_file(settings_file)["param_groups"];
    MT_CHECK(settings.kind() == PyKind::list && settings.items().size() == group_names.size(),
             settings_file.string(), ": ",
             settings.kind() == PyKind::list ? settings.items().size() : 0,
             " param groups, the model states name ", group_names.size());

    // Each name's place in the legacy model; the transformer layers' numbers, in order.
    std::vector<std::vector<Legacy>> legacy(group_names.size());
    std::set<int64_t> layer_numbers;
    for (size_t g = 0; g < group_names.size(); ++g)
        for (const std::string& n : group_names[g]) {
            legacy[g].push_back(legacy_of(n, tag.string()));
            if (pipeline_layer(legacy[g].back()))
                layer_numbers.insert(std::get<1>(legacy[g].back().place));
        }
    std::map<int64_t, int64_t> layer_index;
    for (int64_t n : layer_numbers) layer_index.emplace(n, int64_t(layer_index.size()));

    UniversalState out;
    std::vector<std::pair<Legacy, Tensor>> weights;
    for (size_t g = 0; g < group_names.size(); ++g) {
        DeepSpeedParamGroup group;
        group.settings = settings.items()[g];
        for (size_t i = 0; i < group_names[g].size(); ++i) {
            const std::string& n = group_names[g][i];
            Legacy l = legacy[g][i];
            if (pipeline_layer(l))
                l.name = "language_model.encoder.layers." +
                         std::to_string(layer_index.at(std::get<1>(l.place))) + "." + l.name;
            const fs::path dir = tag / "zero" / n;
            const PyValue fp32 = read_deepspeed_file(dir / "fp32.pt");
            // The vocabulary's rows, cut to the tokenizer's by ds_to_universal: padded back.
            const bool vocab = fp32.kind() == PyKind::dict && fp32.find("vocab_tensor") &&
                               fp32["vocab_tensor"].kind() == PyKind::boolean &&
                               fp32["vocab_tensor"].as_bool();
            auto read = [&](const char* file, const PyValue& contents) {
                Tensor t = tensor_in(contents, dir / file);
                MT_CHECK(t.dtype() == DType::f32, (dir / file).string(), ": not float32");
                if (!vocab || t.dim() != 2 || t.size(0) >= padded_vocab_size) return t.contiguous();
                Tensor padded = Tensor::zeros({padded_vocab_size, t.size(1)}, DType::f32);
                padded.slice(0, 0, t.size(0)).copy_from(t);
                return padded;
            };
            DeepSpeedParamState p{l.name, read("fp32.pt", fp32),
                                  read("exp_avg.pt", read_deepspeed_file(dir / "exp_avg.pt")),
                                  read("exp_avg_sq.pt", read_deepspeed_file(dir / "exp_avg_sq.pt")),
                                  PyValue()};
            MT_CHECK(p.exp_avg.shape() == p.fp32.shape() && p.exp_avg_sq.shape() == p.fp32.shape(),
                     dir.string(), ": the moments' shapes differ from the weights'");
            p.step = read_deepspeed_file(dir / "step.pt");
            weights.emplace_back(l, p.fp32);
            group.params.push_back(std::move(p));
        }
        out.groups.push_back(std::move(group));
    }
    std::stable_sort(weights.begin(), weights.end(),
                     [](const auto& a, const auto& b) { return a.first.place < b.first.place; });
    out.model = PyValue::dict(true);
    for (const auto& [l, t] : weights)
        place(out.model, l.name, PyValue::tensor(dtype == DType::f32 ? t : cast_float(t, dtype)));
    return out;
}

}  // namespace mt::plugins::torch_ckpt
