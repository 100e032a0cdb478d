#include "deepspeed_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "deepspeed_moe_files.h"
#include "deepspeed_universal.h"
#include "deepspeed_zero_shards.h"
#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "torch_checkpoint.h"
#include "torch_state.h"

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;
using io::PyValue;

namespace {

constexpr const char* kRankFile = "mp_rank_00_model_states.pt";

// The tag folder (global_stepN) of `dir`: `dir` itself, or the one DeepSpeed's `latest` names.
std::optional<fs::path> find_tag_dir(const fs::path& dir) {
    if (fs::exists(dir / kRankFile)) return dir;
    std::ifstream latest(dir / "latest");
    std::string tag;
    if (!latest || !std::getline(latest, tag)) return std::nullopt;
    tag.erase(tag.find_last_not_of(" \t\r\n") + 1);
    if (tag.empty() || tag.find('/') != std::string::npos || !fs::exists(dir / tag / kRankFile))
        return std::nullopt;
    return dir / tag;
}

fs::path need_tag_dir(const fs::path& dir) {
    auto tag = find_tag_dir(dir);
    MT_CHECK(tag.has_value(), dir.string(),
             ": not a DeepSpeed checkpoint (no `latest` file naming a folder with ", kRankFile,
             ", and no ", kRankFile, " in it)");
    return *tag;
}

// layer_LL-model_TT-model_states.pt: (LL, TT) -> file; mp_rank_TT_model_states.pt count.
struct TagFiles {
    std::map<std::pair<int, int>, fs::path> layers;
    int rank_files = 0;
};

TagFiles list_files(const fs::path& tag) {
    TagFiles f;
    for (const auto& entry : fs::directory_iterator(tag)) {
        const std::string name = entry.path().filename().string();
        int layer = 0, tp = 0, n = 0;
        if (std::sscanf(name.c_str(), "layer_%d-model_%d-model_states.pt%n", &layer, &tp, &n) ==
                2 &&
            size_t(n) == name.size())
            f.layers[{layer, tp}] = entry.path();
        else if (name.rfind("mp_rank_", 0) == 0 && name.ends_with("_model_states.pt"))
            ++f.rank_files;
    }
    return f;
}

// The tensor- and pipeline-parallel sizes the tag folder's files were saved with.
CheckpointLayout layout_of(const fs::path& tag, const TagFiles& files) {
    CheckpointLayout l;
    if (files.layers.empty()) {  // no pipeline engine: one mp_rank file per tensor rank
        l.tensor_parallel = files.rank_files;
        return l;
    }
    const int first = files.layers.begin()->first.first;
    l.tensor_parallel = 0;
    for (const auto& [key, path] : files.layers) l.tensor_parallel += key.first == first;
    MT_CHECK(files.rank_files % l.tensor_parallel == 0, tag.string(), ": ", files.rank_files,
             " mp_rank files for ", l.tensor_parallel, " tensor ranks");
    l.pipeline_parallel = files.rank_files / l.tensor_parallel;
    return l;
}

PyValue string_dict() {
    return PyValue::dict(true);
}

std::vector<std::string> keys_of(const PyValue& d) {
    std::vector<std::string> out;
    for (const auto& [k, v] : d.dict_ref().items) out.push_back(k.as_string());
    return out;
}

std::string key_list(const PyValue& d) {
    std::string out;
    for (const std::string& k : keys_of(d)) {
        if (out.size() > 200) return out + ", ...";
        out += (out.empty() ? "" : ", ") + k;
    }
    return out;
}

bool has(const PyValue& d, const char* key) {
    return d.find(key) != nullptr;
}

// The embedding layer's file ("word_embeddings.weight", ...) nested as the legacy embedding
// module's state dict: {"word_embeddings": {"weight": ...}, ...}.
PyValue nested(const PyValue& flat, const fs::path& file) {
    PyValue out = string_dict();
    for (const auto& [k, v] : flat.dict_ref().items) {
        const std::string key = k.as_string();
        const size_t dot = key.find('.');
        MT_CHECK(dot != std::string::npos, file.string(), ": unexpected embedding key '",
                 key.substr(0, 100), "'");
        PyValue inner = string_dict();
        inner.dict_ref().set(key.substr(dot + 1), v);
        out.dict_ref().set(key.substr(0, dot), std::move(inner));
    }
    return out;
}

// The flat names ("language_model.embedding.word_embeddings.weight", ...) and shapes of a
// nested state dict's tensors, in its order.
void flat_tensors(const PyValue& d, const std::string& prefix,
                  std::vector<std::pair<std::string, Shape>>& out) {
    for (const auto& [k, v] : d.dict_ref().items) {
        const std::string name = prefix + k.as_string();
        if (v.kind() == io::PyKind::dict)
            flat_tensors(v, name + ".", out);
        else if (v.kind() == io::PyKind::tensor)
            out.emplace_back(name, v.as_tensor().shape());
    }
}

// The first floating-point dtype of a nested state dict's tensors.
DType model_dtype(const PyValue& d) {
    for (const auto& [k, v] : d.dict_ref().items) {
        if (v.kind() == io::PyKind::dict) return model_dtype(v);
        if (v.kind() == io::PyKind::tensor) return v.as_tensor().dtype();
    }
    return DType::f32;
}

// from_py's state; an optimizer it cannot pair with the model is left out, saying why (the
// model still loads; resuming then asks for --no-load-optim).
CheckpointState with_optimizer(PyValue& root, const fs::path& file, std::string not_read) {
    if (not_read.empty()) {
        try {
            return from_py(root, file.string());
        } catch (const Error& e) {
            not_read = std::string("DeepSpeed's optimizer state is not read: ") + e.what();
            root.dict_ref().set("optimizer", PyValue());
        }
    }
    CheckpointState state = from_py(root, file.string());
    state.optimizer.reset();
    state.optimizer_not_loaded = not_read;
    return state;
}

}  // namespace

PyValue read_deepspeed_file(const fs::path& file) {
    try {
        return io::load_torch_file(file);
    } catch (const Error& e) {
        MT_FAIL("cannot read DeepSpeed checkpoint file ", file.string(), ": ", e.what());
    }
}

bool DeepSpeedCheckpoint::detect(const fs::path& dir) const {
    return find_tag_dir(dir).has_value();
}

void DeepSpeedCheckpoint::save(const fs::path&, const CheckpointState&) {
    MT_FAIL("the deepspeed format is read only: save as torch or torch_dist");
}

void DeepSpeedCheckpoint::save_ranks(const fs::path&, const CheckpointLayout&, const RankStateFn&) {
    MT_FAIL("the deepspeed format is read only: save as torch or torch_dist");
}

CheckpointArgs DeepSpeedCheckpoint::load_args(const fs::path& dir) {
    const fs::path file = need_tag_dir(dir) / kRankFile;
    return args_from_py(io::load_torch_structure(file), file.string());
}

CheckpointLayout DeepSpeedCheckpoint::layout(const fs::path& dir) {
    const fs::path tag = need_tag_dir(dir);
    if (is_universal(tag)) return CheckpointLayout{};  // the whole model, joined
    return layout_of(tag, list_files(tag));
}

CheckpointState DeepSpeedCheckpoint::load(const fs::path& dir) {
    return load_single_rank(*this, dir, "DeepSpeed ");
}

CheckpointState DeepSpeedCheckpoint::load_rank(const fs::path& dir, int64_t tp_rank,
                                               int64_t pp_rank) {
    const fs::path tag = need_tag_dir(dir);
    const TagFiles files = list_files(tag);
    const bool universal = is_universal(tag);
    const CheckpointLayout l = universal ? CheckpointLayout{} : layout_of(tag, files);
    MT_CHECK(tp_rank >= 0 && tp_rank < l.tensor_parallel && pp_rank >= 0 &&
                 pp_rank < l.pipeline_parallel,
             "no rank (tensor ", tp_rank, ", pipeline ", pp_rank, ") in the tensor-parallel ",
             l.tensor_parallel, " x pipeline-parallel ", l.pipeline_parallel,
             " DeepSpeed checkpoint ", tag.string());
    // The args, iteration and schedule (every rank file holds the same).
    const fs::path rank_file = tag / kRankFile;
    const PyValue ranks = read_deepspeed_file(rank_file);
    PyValue root = string_dict();
    for (const char* key : {"args", "iteration", "checkpoint_version", "lr_scheduler"})
        if (const PyValue* v = ranks.find(key)) root.dict_ref().set(key, *v);
    // The optimizer state of a one-rank run whose DeepSpeed engine kept the torch optimizer
    // Megatron-DeepSpeed built (fp32, ZeRO stage 0): its parameters in the model's order. (ZeRO
    // stages 1 and 2: the shards, joined below once the model's names are known.)
    std::string optimizer_not_read =
        "DeepSpeed's optimizer state of this checkpoint is not read (a mixed-precision optimizer "
        "without ZeRO, or several ranks without ZeRO)";
    if (const PyValue* o = ranks.find("optimizer"); o && o->kind() == io::PyKind::dict &&
                                                    o->find("param_groups") && o->find("state") &&
                                                    l.ranks() == 1) {
        root.dict_ref().set("optimizer", *o);
        optimizer_not_read.clear();
    }
    // DeepSpeed's per-parameter optimizer state (ZeRO's shards, a universal folder) paired with
    // the model now in root, `model_name` giving the model's name of each; an fp16 run's is not
    // read (its dynamic loss scaler is an object of DeepSpeed's).
    using Groups = std::vector<DeepSpeedParamGroup>;
    auto adopt = [&](const std::function<std::optional<Groups>()>& read_groups,
                     const std::function<std::string(const std::string&)>& model_name) {
        const DType dtype = model_dtype(root["model"]);
        if (dtype == DType::f16) {
            optimizer_not_read = "DeepSpeed's optimizer state of an fp16 run is not read";
            return;
        }
        const std::optional<Groups> groups = read_groups();
        if (!groups) return;
        std::vector<std::pair<std::string, Shape>> tensors;
        flat_tensors(root["model"], "", tensors);
        std::vector<std::string> order;
        for (const auto& t : tensors) order.push_back(t.first);
        root.dict_ref().set("optimizer", torch_optimizer_state(*groups, model_name, order,
                                                               dtype != DType::f32, tag.string()));
        optimizer_not_read.clear();
    };
    if (universal) {
        const PyValue& args = ranks["args"];
        const PyValue* vocab = args.find("padded_vocab_size");
        MT_CHECK(vocab && vocab->kind() == io::PyKind::integer, rank_file.string(),
                 ": no padded_vocab_size in the args");
        auto flag = [&](const char* name) {
            const PyValue* v = args.find(name);
            return v && v->kind() == io::PyKind::boolean && v->as_bool();
        };
        const DType dtype = flag("bf16") ? DType::bf16 : flag("fp16") ? DType::f16 : DType::f32;
        UniversalState u = read_universal(tag, vocab->as_int(), dtype);
        root.dict_ref().set("model", std::move(u.model));
        // (Its parameters carry the model's names already.)
        adopt([&] { return std::optional<Groups>(std::move(u.groups)); },
              [](const std::string& n) { return n; });
        return with_optimizer(root, rank_file, optimizer_not_read);
    }
    // DeepSpeed's model-parallel rank: the stage's tensor ranks one after another.
    const int mp_rank = int(pp_rank * l.tensor_parallel + tp_rank);
    char name[64];
    std::snprintf(name, sizeof name, "mp_rank_%02d_model_states.pt", mp_rank);
    const fs::path own_file = tag / name;
    const PyValue own = mp_rank == 0 ? ranks : read_deepspeed_file(own_file);
    // ZeRO's shards of this rank, if any, named as param_shapes names them (or, where the engine
    // saved none, as their param_slice_mappings do: DeepSpeed's MoE engines).
    auto zero = [&](const std::function<std::string(const std::string&)>& model_name) {
        const PyValue* shapes = own.find("param_shapes");
        std::vector<std::pair<std::string, Shape>> tensors;
        flat_tensors(root["model"], "", tensors);
        const std::map<std::string, Shape> model_shapes(tensors.begin(), tensors.end());
        auto model_shape = [&](const std::string& name) -> std::optional<Shape> {
            auto it = model_shapes.find(model_name(name));
            if (it == model_shapes.end()) return std::nullopt;
            return it->second;
        };
        adopt(
            [&] {
                return zero_param_groups(tag, mp_rank, shapes ? *shapes : PyValue(), model_shape);
            },
            model_name);
    };
    if (files.layers.empty()) {  // --no-pipeline-parallel: the module is Megatron's state dict
        const PyValue* module = own.find("module");
        MT_CHECK(module && !module->is_none(), own_file.string(), ": no 'module' (the model)");
        PyValue model = *module;
        // Megatron-DeepSpeed's MoE layers: their experts and optimizer in files of their own.
        const bool moe = add_deepspeed_experts(tag, mp_rank, model);
        root.dict_ref().set("model", std::move(model));
        PyValue experts_optimizer = moe ? deepspeed_expert_optimizer(tag, mp_rank) : PyValue();
        if (!experts_optimizer.is_none()) {
            if (l.ranks() == 1) {
                root.dict_ref().set("optimizer", std::move(experts_optimizer));
                optimizer_not_read.clear();
            }
        } else {
            // (The engine's module is the model: its names are the state dict's.)
            zero([](const std::string& n) { return n.rfind("module.", 0) == 0 ? n.substr(7) : n; });
        }
        return with_optimizer(root, own_file, optimizer_not_read);
    }
    MT_CHECK(!has_deepspeed_experts(tag, mp_rank), tag.string(),
             ": not supported yet: Megatron-DeepSpeed's MoE layers under its pipeline engine "
             "(its MoE scripts run with --no-pipeline-parallel)");
    // The pipeline engine's layers: each file's keys say what it is (and its number, LL, is the
    // pipeline module's index of the layer: DeepSpeed's names "LL.<key>").
    PyValue embedding, final_norm, head;
    std::vector<PyValue> layers;
    std::vector<int> layer_index;
    int final_norm_index = -1, head_index = -1, embedding_index = -1;
    fs::path embedding_file;
    for (const auto& [key, file] : files.layers) {
        if (key.second != tp_rank) continue;
        PyValue layer = read_deepspeed_file(file);
        if (has(layer, "word_embeddings.weight")) {
            embedding = std::move(layer);
            embedding_file = file;
            embedding_index = key.first;
        } else if (has(layer, "input_layernorm.weight")) {
            layers.push_back(std::move(layer));
            layer_index.push_back(key.first);
        } else if (has(layer, "lm_head.weight")) {
            head = std::move(layer);
            head_index = key.first;
        } else if (has(layer, "weight") && keys_of(layer).size() <= 2) {
            final_norm = std::move(layer);
            final_norm_index = key.first;
        } else {
            MT_FAIL(file.string(), ": not supported yet: this Megatron-DeepSpeed pipeline layer (",
                    key_list(layer), ")");
        }
    }
    MT_CHECK(!embedding.is_none() && !final_norm.is_none() && !layers.empty(), tag.string(),
             ": expected an embedding, transformer layers and a final norm among the layer files "
             "of tensor rank ",
             tp_rank);
    MT_CHECK(layers.size() % size_t(l.pipeline_parallel) == 0, tag.string(), ": ", layers.size(),
             " transformer layers do not split evenly over ", l.pipeline_parallel,
             " pipeline stages");
    const size_t per_stage = layers.size() / size_t(l.pipeline_parallel);
    const bool first = pp_rank == 0, last = pp_rank == l.pipeline_parallel - 1;
    PyValue encoder = string_dict();
    for (size_t i = 0; i < per_stage; ++i)
        for (const auto& [k, v] : layers[size_t(pp_rank) * per_stage + i].dict_ref().items)
            encoder.dict_ref().set("layers." + std::to_string(i) + "." + k.as_string(), v);
    PyValue language_model = string_dict();
    if (first) language_model.dict_ref().set("embedding", nested(embedding, embedding_file));
    PyValue model = string_dict();
    if (last) {
        for (const auto& [k, v] : final_norm.dict_ref().items)
            encoder.dict_ref().set("final_layernorm." + k.as_string(), v);
        if (!head.is_none()) {
            PyValue output = string_dict();
            output.dict_ref().set("weight", head["lm_head.weight"]);
            language_model.dict_ref().set("output_layer", std::move(output));
        } else {
            PyValue for_head = string_dict();
            for_head.dict_ref().set("weight", embedding["word_embeddings.weight"]);
            model.dict_ref().set("word_embeddings_for_head", std::move(for_head));
        }
    }
    language_model.dict_ref().set("encoder", std::move(encoder));
    model.dict_ref().set("language_model", std::move(language_model));
    root.dict_ref().set("model", std::move(model));
    // DeepSpeed's names of this stage's parameters: the embedding under "tied_modules.embed." when
    // tied to the head (on the last stage a copy, of which the model keeps the word embeddings
    // as word_embeddings_for_head), else by layer number as the others.
    std::map<std::string, std::string> names;
    auto name_all = [&](const PyValue& layer, const std::string& from, const std::string& to) {
        for (const std::string& k : keys_of(layer)) names[from + k] = to + k;
    };
    for (const std::string& k : keys_of(embedding)) {
        const std::string to = first ? "language_model.embedding." + k
                               : k == "word_embeddings.weight" && last
                                   ? "word_embeddings_for_head.weight"
                                   : "";
        names["tied_modules.embed." + k] = to;
        names[std::to_string(embedding_index) + "." + k] = to;
    }
    for (size_t i = 0; i < per_stage; ++i)
        name_all(layers[size_t(pp_rank) * per_stage + i],
                 std::to_string(layer_index[size_t(pp_rank) * per_stage + i]) + ".",
                 "language_model.encoder.layers." + std::to_string(i) + ".");
    if (last) {
        name_all(final_norm, std::to_string(final_norm_index) + ".",
                 "language_model.encoder.final_layernorm.");
        if (!head.is_none())
            names[std::to_string(head_index) + ".lm_head.weight"] =
                "language_model.output_layer.weight";
    }
    zero([&](const std::string& n) {
        auto it = names.find(n);
        return it != names.end() ? it->second : n;
    });
    return with_optimizer(root, rank_file, optimizer_not_read);
}

}  // namespace mt::plugins::torch_ckpt
