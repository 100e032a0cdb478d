#include "torch_dist_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <simdjson.h>

#include "dcp_metadata.h"
#include "dcp_storage.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/torch_file.h"
#include "mt/parallel/collectives.h"
#include "torch_dist_flattened.h"
#include "torch_dist_keys.h"
#include "torch_dist_optimizer.h"
#include "torch_layout.h"
#include "torch_state.h"

namespace mt::plugins::torch_dist {

namespace {

using io::PyKind;
using io::PyValue;

constexpr const char* kConfigName = "metadata.json";
constexpr const char* kCommonName = "common.pt";
constexpr const char* kDcpMetadataName = ".metadata";
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kCommonStateKey = "common_state/shard_0_1";
// megatron/core/dist_checkpointing/core.py CheckpointingConfig as core_v0.13 writes it.
constexpr const char* kConfigJson =
    "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1, "
    "\"common_backend\": \"torch\", \"common_backend_version\": 1}";

// Megatron writes metadata.json last: without it a directory is an unfinished save.
void check_config(const fs::path& iter_dir) {
    const fs::path config = iter_dir / kConfigName;
    MT_CHECK(fs::exists(config), iter_dir.string(), " has no ", kConfigName,
             " (not a torch_dist checkpoint, or one whose save did not finish)");
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    MT_CHECK(!parser.load(config.string()).get(doc), "cannot read ", config.string(),
             " (unreadable or not JSON)");
    std::string_view backend;
    MT_CHECK(!doc["sharded_backend"].get_string().get(backend), config.string(),
             ": 'sharded_backend' is missing or not a string");
    MT_CHECK(backend == "torch_dist", config.string(), ": sharded_backend is '", backend,
             "'; only torch_dist is read");
}

// The dict of every non-sharded value: common.pt up to core_v0.18; from core_v0.19 the
// ShardedObject "common_state" inside the DCP files, a one-item list holding the dict.
PyValue read_common(const fs::path& iter_dir, const DcpMetadata& meta) {
    const fs::path file = iter_dir / kCommonName;
    PyValue common;
    if (const DcpEntry* e = meta.find(kCommonStateKey); e && !fs::exists(file)) {
        const PyValue list = read_dcp_object(iter_dir, *e);
        MT_CHECK(list.kind() == PyKind::list && list.items().size() == 1, iter_dir.string(), ": ",
                 kCommonStateKey, " holds ", io::short_repr(list, 80), ", not a one-item list");
        common = list.items()[0];
    } else {
        MT_CHECK(fs::exists(file), iter_dir.string(), " has neither ", kCommonName, " nor ",
                 kCommonStateKey);
        try {
            common = io::load_torch_file(file);
        } catch (const Error& e) {
            MT_FAIL("cannot read ", file.string(), ": ", e.what());
        }
    }
    MT_CHECK(common.kind() == PyKind::dict, iter_dir.string(), ": the common state is a Python ",
             io::py_kind_name(common.kind()), ", not a dict");
    return common;
}

// Groups each block's layers together in layer order, as Megatron's state dicts list them
// (the stacked keys come out of the checkpoint key by key): each tensor sorts by (where its
// block first appears, layer), other tensors by their own position.
void order_by_layer(std::vector<std::pair<std::string, ShardedTensor>>& model) {
    std::map<std::string, size_t> first_of_block;
    std::vector<std::pair<std::pair<size_t, int64_t>, size_t>> keys;
    for (size_t i = 0; i < model.size(); ++i) {
        const std::string& name = model[i].first;
        std::pair<size_t, int64_t> key{i, 0};
        for (const char* block : {"decoder.layers.", "encoder.layers."}) {
            const size_t n = std::char_traits<char>::length(block);
            if (!name.starts_with(block) || n >= name.size() ||
                !std::isdigit(static_cast<unsigned char>(name[n])))
                continue;
            key = {first_of_block.try_emplace(block, i).first->second, std::stoll(name.substr(n))};
        }
        keys.push_back({key, i});
    }
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<std::string, ShardedTensor>> out;
    for (const auto& k : keys) out.push_back(std::move(model[k.second]));
    model = std::move(out);
}

// The common dict: to_py's dict of the `torch` format (args, checkpoint_version, iteration,
// opt_param_scheduler, rng_state, num_floating_point_operations_so_far) without the sharded
// parts, plus Megatron's content metadata. No rerun_state_machine: megatron-core v0.13's
// load_checkpoint asks for its sharded part (rerun_state_machine_state) whenever the common dict
// names it, and there is none to write (core_v0.19 leaves the key out when it has no state).
PyValue common_to_py(const CheckpointState& state) {
    CheckpointState rest = state;  // tensors are shared, not copied
    rest.model.clear();
    rest.optimizer.reset();
    const PyValue full = torch_ckpt::to_py(rest);
    PyValue common = PyValue::dict();
    for (const auto& [k, v] : full.dict_ref().items)
        if (!(k.kind() == PyKind::string &&
              (k.as_string() == "model" || k.as_string() == "rerun_state_machine")))
            common.dict_ref().set(k, v);
    common.dict_ref().set("content_metadata", PyValue::dict());
    return common;
}

CheckpointState common_from_py(const PyValue& common, const std::string& file) {
    PyValue root = PyValue::dict();
    // The tensors, and the optimizer's moments with them, come from the DCP files.
    for (const auto& [k, v] : common.dict_ref().items)
        if (!(k.kind() == PyKind::string && k.as_string() == "optimizer"))
            root.dict_ref().set(k, v);
    root.dict_ref().set("model", PyValue::dict(true));
    return torch_ckpt::from_py(root, file);
}

}  // namespace

bool TorchDistCheckpoint::detect(const std::filesystem::path& dir) const {
    const auto latest = torch_ckpt::read_tracker(dir);
    if (!latest) return false;
    const fs::path iter = torch_ckpt::iteration_dir(dir, *latest);
    return fs::exists(iter / kConfigName) || fs::exists(iter / kDcpMetadataName);
}

namespace {

// Megatron's state dicts repeat a module a model registers twice (T5Model's position_embeddings
// and output_layer): the optimizer holds the parameter's moments under one of its keys only. A
// model entry without moments that equals, bit for bit, one with moments is such a repeat: it
// moves to state.model_aliases instead of asking for moments of its own.
void set_aside_repeats(CheckpointState& state, const NamedTensors& moments) {
    std::set<std::string> with_moments;
    for (const auto& [key, t] : moments)
        if (const size_t dot = key.find('.'); dot != std::string::npos)
            with_moments.insert(key.substr(dot + 1));
    const auto same = [](const Tensor& a, const Tensor& b) {
        if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
        const Tensor x = a.contiguous(), y = b.contiguous();
        return std::memcmp(x.raw_data(), y.raw_data(), size_t(x.nbytes())) == 0;
    };
    std::set<std::string> repeats;
    for (const auto& [key, entry] : state.model) {
        if (with_moments.count(key)) continue;
        for (const auto& [name, t] : state.model)
            if (name != key && with_moments.count(name) && same(t.local, entry.local)) {
                state.model_aliases.emplace_back(key, name);
                repeats.insert(key);
                break;
            }
    }
    std::erase_if(state.model, [&](const auto& entry) { return repeats.count(entry.first) > 0; });
}

}  // namespace

void TorchDistCheckpoint::save(const std::filesystem::path& dir, const CheckpointState& state) {
    auto one = make_local_communicator();
    save_collective(dir, state, *one);
}

namespace {

// save_collective, with the model tensors of `share` made by `make` (placeholders in `share`)
// when their chunks are written, when it is given.
void save_share(const fs::path& dir, const CheckpointState& share, Communicator& world,
                const std::function<Tensor(size_t)>* make) {
    const bool root = world.rank() == 0;
    for (const auto& [name, t] : share.model)
        MT_CHECK(t.local.dim() == int64_t(t.global_shape.size()) &&
                     t.global_offset.size() == t.global_shape.size(),
                 "torch_dist: ", name, " is a ", t.local.describe(), " piece of ",
                 shape_str(t.global_shape), " at ", shape_str(t.global_offset));
    const KeyLayout layout = key_layout(share.args);
    std::vector<StoredTensor> stored = stack(share.model, layout);
    // The keys Megatron's state dict repeats an entry under (not a layer's: stored as named).
    for (const auto& repeat : share.model_aliases) {
        const std::string& original = repeat.second;  // a plain reference: lambdas capture it
        const auto it = std::find_if(stored.begin(), stored.end(),
                                     [&](const StoredTensor& s) { return s.key == original; });
        if (it == stored.end()) continue;  // the rank holding the original writes it
        StoredTensor copy = *it;
        copy.key = repeat.first;
        stored.push_back(std::move(copy));
    }
    const bool shards = share.optimizer && !share.optimizer->shards.empty();
    // Megatron's ChainedOptimizer under expert parallelism keys each part's state behind
    // "chained_<i>." (the dense parameters' 0, the experts' 1).
    const std::vector<torch_ckpt::OptimizerChain> chains =
        share.optimizer ? torch_ckpt::optimizer_chains(*share.optimizer)
                        : std::vector<torch_ckpt::OptimizerChain>();
    const bool chained = chains.size() > 1;
    if (shards) {
        std::vector<OptimizerShard> parts[2];
        for (const OptimizerShard& s : share.optimizer->shards)
            parts[chained && s.expert_parallel ? 1 : 0].push_back(s);
        for (size_t c = 0; c < 2; ++c)
            for (StoredTensor& s : flattened_optimizer_shards(
                     parts[c], layout, chained ? str("chained_", c, ".") : std::string()))
                stored.push_back(std::move(s));
    } else if (share.optimizer) {
        // Buffers (a router's expert_bias) have no optimizer state.
        ShardedTensors trained;
        for (const auto& entry : share.model)
            if (!megatron_buffer(entry.first)) trained.push_back(entry);
        MT_CHECK(share.optimizer->params.size() == trained.size(),
                 "torch_dist: optimizer state for ", share.optimizer->params.size(),
                 " tensors, the model has ", trained.size());
        for (size_t c = 0; c < chains.size(); ++c) {
            ShardedTensors part;
            for (size_t i : chains[c].members) part.push_back(trained[i]);
            const std::string chain = chained ? str("chained_", c, ".") : "";
            for (StoredTensor& s : optimizer_moments(chains[c].optimizer, part, layout, chain))
                stored.push_back(std::move(s));
        }
    }
    // Rank 0 writes the union of every rank's _extra_state keys (a stage's per-layer keys, a
    // rank's experts).
    std::vector<std::string> extra_keys;
    {
        std::set<std::string> seen;
        std::string mine;
        // The repeated entries are modules of the state dict too (T5Model's output_layer).
        ShardedTensors named = share.model;
        for (const auto& [alias, original] : share.model_aliases)
            for (const auto& entry : share.model)
                if (entry.first == original) named.emplace_back(alias, entry.second);
        for (const std::string& k : extra_state_keys(named, layout)) mine += k + '\n';
        for (const std::string& rank_keys : parallel::all_gather_bytes(world, mine))
            for (size_t a = 0, b; (b = rank_keys.find('\n', a)) != std::string::npos; a = b + 1)
                if (std::string k = rank_keys.substr(a, b - a); seen.insert(k).second)
                    extra_keys.push_back(std::move(k));
    }

    // Rank 0 makes the temporary iteration directory; every rank writes its file into it.
    const fs::path tmp = parallel::broadcast_bytes(
        world, root ? torch_ckpt::begin_write(dir, share.iteration).string() : std::string(), 0);
    std::vector<DcpEntry> entries;
    if (root || !stored.empty()) {
        DistcpWriter data(tmp, "__" + std::to_string(world.rank()) + "_0.distcp");
        // DCP puts byte objects before tensors; the main replica's (rank 0's) are written.
        const PyValue none_list = PyValue::list({PyValue()});
        if (root)
            for (const std::string& key : extra_keys) {
                DcpEntry e;
                e.fqn = key;
                e.bytes = true;
                e.chunks.push_back({{}, {}, data.add_object(none_list)});
                entries.push_back(std::move(e));
            }
        // A streamed share's placeholders by storage: chunk tensors view them.
        std::map<const Storage*, size_t> model_index;
        size_t made_index = SIZE_MAX;  // the placeholder last made, and its tensor
        Tensor made;
        if (make)
            for (size_t i = 0; i < share.model.size(); ++i)
                model_index.emplace(share.model[i].second.local.storage().get(), i);
        for (const StoredTensor& s : stored) {
            DcpEntry e;
            e.fqn = s.key;
            e.dtype = s.chunks.front().second.dtype();
            e.size = s.global_shape;
            e.flattened_from = s.flattened_from;
            for (const auto& [offset, t] : s.chunks) {
                auto it = model_index.find(t.storage().get());
                if (it == model_index.end()) {
                    e.chunks.push_back({offset, t.shape(), data.add_tensor(t)});
                    continue;
                }
                // The chunk is the placeholder or a run of its rows (a Mamba mixer tensor's
                // part): made once, for its first chunk.
                const auto& [name, placeholder] = share.model[it->second];
                const int64_t at = t.offset() - placeholder.local.offset();
                MT_CHECK(t.is_contiguous() && placeholder.local.is_contiguous() && at >= 0 &&
                             at + t.numel() <= placeholder.local.numel(),
                         "torch_dist: ", name, " is saved streamed as a chunk ",
                         shape_str(t.shape()), " of a ", shape_str(placeholder.local.shape()),
                         " tensor; only whole ones or runs of rows can be");
                if (made_index != it->second) {
                    made = (*make)(it->second);
                    made_index = it->second;
                    MT_CHECK(made.shape() == placeholder.local.shape() &&
                                 made.dtype() == placeholder.local.dtype() && made.is_contiguous(),
                             "torch_dist: '", name, "' was declared ", placeholder.local.describe(),
                             " but made ", made.describe());
                }
                e.chunks.push_back(
                    {offset, t.shape(),
                     data.add_tensor(
                         made.view({made.numel()}).slice(0, at, at + t.numel()).view(t.shape()))});
            }
            entries.push_back(std::move(e));
        }
        data.close();
    }
    // The stored tensors' descriptions go before the index is built (a model of many tensors
    // holds as much in them as in the index).
    stored = {};
    // Rank 0 indexes every rank's chunks (its own without a round trip through bytes) and
    // writes the common state.
    DcpMetadata meta;
    if (world.size() == 1) {
        merge_entries(meta, std::move(entries));
    } else {
        const std::vector<std::string> indexes =
            parallel::all_gather_bytes(world, encode_entries(entries));
        entries = {};
        if (!root) return;
        for (const std::string& index : indexes) merge_entries(meta, decode_entries(index));
    }
    PyValue common = common_to_py(share);
    // ChainedOptimizer.sharded_state_dict's plain part: one optimizer's, or {0: ..., 1: ...}.
    auto chained_common = [&](auto one) {
        if (!chained) return one(*share.optimizer);
        PyValue optimizer = PyValue::dict();
        for (size_t c = 0; c < chains.size(); ++c)
            optimizer.dict_ref().set(PyValue::integer(int64_t(c)), one(chains[c].optimizer));
        return optimizer;
    };
    if (shards) {
        // DistributedOptimizer.sharded_state_dict's plain part, and the content metadata that
        // tells a loader how the state is sharded.
        common.dict_ref().set("optimizer", chained_common([](const OptimizerCheckpoint& o) {
                                  PyValue optimizer = torch_ckpt::distributed_optimizer_to_py(o);
                                  optimizer.dict_ref().set(
                                      "param_state_sharding_type",
                                      PyValue::string(kFullyShardedModelSpace));
                                  return optimizer;
                              }));
        PyValue content = PyValue::dict();
        content.dict_ref().set("distrib_optim_sharding_type",
                               PyValue::string(kFullyShardedModelSpace));
        common.dict_ref().set("content_metadata", std::move(content));
    } else if (share.optimizer) {
        common.dict_ref().set("optimizer", chained_common(optimizer_common_to_py));
    }
    io::save_torch_file(tmp / kCommonName, common);
    write_dcp_metadata(tmp / kDcpMetadataName, meta);
    io::AtomicFile config(tmp / kConfigName);
    config.stream() << kConfigJson;
    config.commit();
    torch_ckpt::finish_write(dir, share.iteration);
}

}  // namespace

void TorchDistCheckpoint::save_collective(const std::filesystem::path& dir,
                                          const CheckpointState& share, Communicator& world) {
    save_share(dir, share, world, nullptr);
}

void TorchDistCheckpoint::save_streamed(const std::filesystem::path& dir,
                                        const CheckpointLayout& layout,
                                        const StreamedStateFn& rank_state) {
    MT_CHECK(layout.ranks() == 1, "the ", name(),
             " format keeps whole tensors, not per-rank files: save the whole model (layout 1x1) "
             "rather than tensor parallel ",
             layout.tensor_parallel, " x pipeline parallel ", layout.pipeline_parallel);
    const StreamedState s = rank_state(0, 0);
    auto one = make_local_communicator();
    save_share(dir, s.state, *one, &s.make);
}

namespace {

// The latest iteration's directory of `dir`, checked, and whether it is the release one.
struct LatestIteration {
    fs::path dir;
    bool release = false;
};
LatestIteration latest_iteration(const fs::path& dir) {
    const auto latest = torch_ckpt::read_tracker(dir);
    MT_CHECK(latest.has_value(), "no checkpoint in ", dir.string(), ": ", torch_ckpt::kTrackerName,
             " is missing");
    const fs::path iter = torch_ckpt::iteration_dir(dir, *latest);
    MT_CHECK(fs::is_directory(iter), dir.string(), "/", torch_ckpt::kTrackerName, " names ",
             latest->release ? std::string("release") : std::to_string(latest->iteration), " but ",
             iter.string(), " does not exist");
    check_config(iter);
    return {iter, latest->release};
}

}  // namespace

CheckpointArgs TorchDistCheckpoint::load_args(const std::filesystem::path& dir) {
    const fs::path iter = latest_iteration(dir).dir;
    const PyValue common = read_common(iter, read_dcp_metadata(iter / kDcpMetadataName));
    return common_from_py(common, (iter / kCommonName).string()).args;
}

CheckpointState TorchDistCheckpoint::load(const std::filesystem::path& dir) {
    const LatestIteration latest = latest_iteration(dir);
    const fs::path& iter = latest.dir;
    const DcpMetadata meta = read_dcp_metadata(iter / kDcpMetadataName);
    const PyValue common = read_common(iter, meta);

    CheckpointState state = common_from_py(common, (iter / kCommonName).string());
    bool has_optimizer = common.find("optimizer") != nullptr;
    NamedTensors model;    // core names (a Mamba mixer's parts apart, as stored)
    NamedTensors moments;  // "<moment>.<core name>"
    for (const DcpEntry& e : meta.entries) {
        if (e.bytes) continue;  // _extra_state, RNG and rerun-machine objects carry no weights
        // A chained optimizer's moments: its parts' keys behind "chained_<i>.".
        const std::string fqn = unchained(e.fqn);
        if (!fqn.starts_with(kOptimizerPrefix)) {
            // Chunks of whole layers (or of the whole tensor) are viewed where they lie in the
            // files; others are assembled into a copy.
            NamedTensors tensors;
            if (auto chunks = read_dcp_whole_chunks(iter, e)) {
                if (chunks->size() == 1) {
                    tensors = unstack(e.fqn, (*chunks)[0]);
                } else {
                    tensors = unstack(e.fqn, tensor_placeholder(e.size, e.dtype));
                    if (tensors.size() == chunks->size())
                        for (size_t i = 0; i < tensors.size(); ++i)
                            tensors[i].second = (*chunks)[i].view(tensors[i].second.shape());
                    else
                        tensors.clear();
                }
            }
            if (tensors.empty()) tensors = unstack(e.fqn, read_dcp_tensor(iter, e));
            for (auto& entry : tensors) model.push_back(std::move(entry));
            continue;
        }
        has_optimizer = true;
        if (!fqn.starts_with(kMomentPrefix) ||
            fqn.find('.', std::strlen(kMomentPrefix)) == std::string::npos) {
            if (state.optimizer_not_loaded.empty())
                state.optimizer_not_loaded =
                    str("not supported yet: optimizer state ", e.fqn, " in ", iter.string());
            continue;
        }
        const std::string rest = fqn.substr(std::strlen(kMomentPrefix));
        const size_t dot = rest.find('.');
        // The distributed optimizer's fp32 master weights are the model's own in an fp32 run.
        if (rest.starts_with("fp32_param.") && !bool_arg(state.args, "fp16") &&
            !bool_arg(state.args, "bf16"))
            continue;
        Tensor t = read_dcp_tensor(iter, e);
        if (!e.flattened_from.empty()) t = unflatten(t, e.flattened_from, e.fqn);
        for (auto& [name, piece] : unstack(rest.substr(dot + 1), t))
            moments.emplace_back(rest.substr(0, dot + 1) + name, piece);
    }
    join_parts(model, iter.string());
    join_parts(moments, iter.string());
    for (auto& [name, t] : model)
        state.model.emplace_back(std::move(name), ShardedTensor::whole(t));
    order_by_layer(state.model);
    if (has_optimizer) set_aside_repeats(state, moments);
    // An optimizer layout not read yet leaves the model loadable (generation, conversion);
    // resuming training with the optimizer reports the reason.
    if (has_optimizer && state.optimizer_not_loaded.empty()) {
        try {
            state.optimizer =
                optimizer_from_py(common, moments, state.model, state.iteration, iter.string());
        } catch (const Error& e) {
            state.optimizer_not_loaded = e.what();
        }
    }
    if (latest.release) state.iteration = 0;
    return state;
}

}  // namespace mt::plugins::torch_dist
