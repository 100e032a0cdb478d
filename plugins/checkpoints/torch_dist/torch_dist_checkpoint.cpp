#include "torch_dist_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <simdjson.h>

#include "dcp_metadata.h"
#include "dcp_storage.h"
#include "megatron_rng_state.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/integrity_manifest.h"
#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/torch_file.h"
#include "mt/parallel/collectives.h"
#include "torch_dist_buckets.h"
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

// The order that groups each block's layers together in layer order, as Megatron's state dicts
// list them (the stacked keys come out of the checkpoint key by key): each tensor sorts by
// (where its block first appears, layer), other tensors by their own position.
std::vector<size_t> layer_order(const NamedTensors& model) {
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
    std::vector<size_t> order;
    for (const auto& k : keys) order.push_back(k.second);
    return order;
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
    for (const auto& [k, v] : full.dict_ref().items) {
        if (k.kind() != PyKind::string) continue;
        const std::string& key = k.as_string();
        if (key == "model" || key == "rerun_state_machine") continue;
        if (key == "rng_state") {
            // Megatron's generators are the rng_state ShardedObject's, which Megatron's loader
            // merges into this list (refusing a value in both); ours stays here.
            PyValue ours = PyValue::dict();
            ours.dict_ref().set(torch_ckpt::kDropoutRngKey, v.items()[0][torch_ckpt::kDropoutRngKey]);
            common.dict_ref().set(k, PyValue::list({std::move(ours)}));
            continue;
        }
        common.dict_ref().set(k, v);
    }
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
    const auto latest = read_tracker(dir);
    if (!latest) return false;
    const fs::path iter = iteration_dir(dir, *latest);
    return fs::exists(iter / kConfigName) || fs::exists(iter / kDcpMetadataName);
}

namespace {

// Megatron's state dicts repeat a module a model registers twice (T5Model's position_embeddings
// and output_layer): the optimizer holds the parameter's moments under one of its keys only. A
// model entry without moments that equals, bit for bit, one with moments is such a repeat: it
// moves to state.model_aliases instead of asking for moments of its own. `with_moments`: the
// core names the optimizer holds moments of; value(i): state.model[i]'s values (made when a
// placeholder's shape matches). Returns the positions set aside, in order.
std::vector<size_t> set_aside_repeats(CheckpointState& state,
                                      const std::set<std::string>& with_moments,
                                      const std::function<Tensor(size_t)>& value) {
    const auto same = [&](size_t i, size_t j) {
        const Tensor& a = state.model[i].second.local;
        const Tensor& b = state.model[j].second.local;
        if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
        const Tensor x = value(i).contiguous(), y = value(j).contiguous();
        return std::memcmp(x.raw_data(), y.raw_data(), size_t(x.nbytes())) == 0;
    };
    std::vector<size_t> repeats;
    for (size_t i = 0; i < state.model.size(); ++i) {
        if (with_moments.count(state.model[i].first)) continue;
        for (size_t j = 0; j < state.model.size(); ++j)
            if (j != i && with_moments.count(state.model[j].first) && same(j, i)) {
                state.model_aliases.emplace_back(state.model[i].first, state.model[j].first);
                repeats.push_back(i);
                break;
            }
    }
    for (size_t k = repeats.size(); k-- > 0;)
        state.model.erase(state.model.begin() + std::ptrdiff_t(repeats[k]));
    return repeats;
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
                const std::function<Tensor(size_t)>* make, bool integrity_manifest) {
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
    // core_v0.19 keys the parts' state plainly unless a distributed optimizer (Muon's
    // layer-wise one) saves in a layout not fully reshardable; core_v0.13 always behind
    // "chained_<i>.".
    using Layout = DistributedOptimizerLayout;
    const Layout distributed = share.optimizer ? share.optimizer->layout : Layout::none;
    const bool fully_reshardable = distributed == Layout::fully_reshardable;
    const bool buckets = share.optimizer && share.optimizer->buckets;
    const bool core_v0_19 = share.optimizer && kept_as_core_v0_19(*share.optimizer);
    const bool prefixed = chained && (!core_v0_19 || share.optimizer->layer_wise);
    // ShardedObjects this rank writes beside the tensors (key, value).
    std::vector<std::pair<std::string, PyValue>> objects;
    if (buckets) {
        BucketWrite w = bucket_state_to_write(*share.optimizer, share.args);
        for (StoredTensor& s : w.tensors) stored.push_back(std::move(s));
        objects = std::move(w.objects);
    } else if (shards) {
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
            const std::string chain = prefixed ? str("chained_", c, ".") : "";
            for (StoredTensor& s :
                 optimizer_moments(chains[c].optimizer, part, layout, chain, &trained))
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
    if (root || !stored.empty() || !objects.empty()) {
        DistcpWriter data(tmp, "__" + std::to_string(world.rank()) + "_0.distcp");
        // DCP puts byte objects before tensors; the main replica's (rank 0's) are written, each
        // a one-item list (a ShardedObject of shape (1,) at (0,)).
        auto object = [&](const std::string& key, const PyValue& value) {
            DcpEntry e;
            e.fqn = key;
            e.bytes = true;
            e.chunks.push_back({{}, {}, data.add_object(PyValue::list({value}))});
            entries.push_back(std::move(e));
        };
        if (root)
            for (const std::string& key : extra_keys) object(key, PyValue());
        for (const auto& [key, value] : objects) object(key + "/shard_0_1", value);
        // Megatron's rng_state ShardedObject, (pipeline, tensor) of (PP, TP), kept by data- and
        // context-parallel rank 0.
        if (share.rng && share.rng->megatron_rank.data == 0 &&
            share.rng->megatron_rank.context == 0) {
            const MegatronRngRank& r = share.rng->megatron_rank;
            const int64_t tp = int_arg(share.args, "tensor_model_parallel_size").value_or(1);
            const int64_t pp = int_arg(share.args, "pipeline_model_parallel_size").value_or(1);
            PyValue states = torch_ckpt::megatron_rng_state_list(share.args, r);
            if (!states.items().empty())
                object(str("rng_state/shard_", r.pipeline, ".", r.tensor, "_", pp, ".", tp),
                       states);
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
    if (buckets) {
        // DistributedOptimizer.sharded_state_dict's plain part: the rest is in the objects.
        common.dict_ref().set("optimizer", chained_common([](const OptimizerCheckpoint&) {
                                  PyValue optimizer = PyValue::dict();
                                  optimizer.dict_ref().set("param_state_sharding_type",
                                                           PyValue::string(kDpReshardable));
                                  return optimizer;
                              }));
    } else if (shards || fully_reshardable) {
        // DistributedOptimizer.sharded_state_dict's plain part, naming how its state is sharded.
        const char* layout = shards ? kFullyShardedModelSpace : kFullyReshardable;
        common.dict_ref().set("optimizer", chained_common([layout](const OptimizerCheckpoint& o) {
                                  PyValue optimizer = torch_ckpt::distributed_optimizer_to_py(o);
                                  optimizer.dict_ref().set("param_state_sharding_type",
                                                           PyValue::string(layout));
                                  return optimizer;
                              }));
    } else if (share.optimizer) {
        common.dict_ref().set("optimizer", chained_common(optimizer_common_to_py));
    }
    // The content metadata that tells a loader how the state is sharded and, for core_v0.19,
    // how the chained parts are keyed (a loader builds its keys from it).
    PyValue content = PyValue::dict();
    if (shards)
        content.dict_ref().set("distrib_optim_sharding_type",
                               PyValue::string(kFullyShardedModelSpace));
    if (core_v0_19) {
        if (fully_reshardable) {
            content.dict_ref().set("distrib_optim_sharding_type",
                                   PyValue::string(kFullyReshardable));
            content.dict_ref().set("distrib_optim_fully_reshardable_mem_efficient",
                                   PyValue::boolean(false));
        } else if (share.optimizer->layer_wise || buckets) {
            content.dict_ref().set("distrib_optim_sharding_type", PyValue::string(kDpReshardable));
        }
        content.dict_ref().set("singleton_local_shards", PyValue::boolean(false));
        content.dict_ref().set("chained_optim_avoid_prefix", PyValue::boolean(true));
    }
    if (!content.dict_ref().items.empty())
        common.dict_ref().set("content_metadata", std::move(content));
    io::save_torch_file(tmp / kCommonName, common);
    write_dcp_metadata(tmp / kDcpMetadataName, meta);
    io::AtomicFile config(tmp / kConfigName);
    config.stream() << kConfigJson;
    config.commit();
    if (integrity_manifest) write_integrity_manifest(tmp);
    torch_ckpt::finish_write(dir, share.iteration);
}

}  // namespace

std::string TorchDistCheckpoint::distributed_layout_refusal(
    DistributedOptimizerLayout layout, const CheckpointArgs& args,
    const std::vector<std::string>& names) const {
    return layout == DistributedOptimizerLayout::dp_reshardable ? bucket_layout_refusal(args, names)
                                                                : "";
}

void TorchDistCheckpoint::save_collective(const std::filesystem::path& dir,
                                          const CheckpointState& share, Communicator& world) {
    save_share(dir, share, world, nullptr, verify_integrity_);
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
    save_share(dir, s.state, *one, &s.make, verify_integrity_);
}

namespace {

// The latest iteration's directory of `dir`, checked, and whether it is the release one.
struct LatestIteration {
    fs::path dir;
    bool release = false;
};
LatestIteration latest_iteration(const fs::path& dir) {
    const auto latest = read_tracker(dir);
    MT_CHECK(latest.has_value(), "no checkpoint in ", dir.string(), ": ", kCheckpointTrackerName,
             " is missing");
    const fs::path iter = iteration_dir(dir, *latest);
    MT_CHECK(fs::is_directory(iter), dir.string(), "/", kCheckpointTrackerName, " names ",
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

namespace {

// The model tensors of a checkpoint in core names and Megatron's order, as placeholders, and
// how each is made from its chunks: a stacked key's layers and an expert key's experts are boxes
// of the stored tensor (views of the file when one chunk holds the box), a Mamba mixer's parts
// joined. Nothing is read but the index.
struct ModelTensors {
    NamedTensors placeholders;
    std::vector<std::function<Tensor()>> make;
};
ModelTensors model_tensors(const fs::path& iter, const DcpMetadata& meta) {
    ModelTensors stored;  // a Mamba mixer's parts apart, as stored
    for (const DcpEntry& e : meta.entries) {
        // _extra_state, RNG and rerun-machine objects carry no weights; moments are not here.
        if (e.bytes || unchained(e.fqn).starts_with(kOptimizerPrefix)) continue;
        auto reader = std::make_shared<const DcpTensorReader>(iter, e);
        for (StackedPiece& piece : stacked_pieces(e.fqn, e.size)) {
            // The piece's box: its leading indices, the rest whole.
            Shape offsets = piece.leading, sizes(piece.leading.size(), 1);
            offsets.resize(e.size.size(), 0);
            sizes.insert(sizes.end(), piece.shape.begin(), piece.shape.end());
            stored.make.push_back([reader, offsets, sizes, shape = piece.shape] {
                return reader->read(offsets, sizes).view(shape);
            });
            stored.placeholders.emplace_back(std::move(piece.name),
                                             tensor_placeholder(piece.shape, e.dtype));
        }
    }
    std::vector<bool> part(stored.placeholders.size(), false);
    for (const PartJoin& join : part_joins(stored.placeholders, iter.string())) {
        std::vector<std::function<Tensor()>> parts;
        for (size_t i : join.parts) {
            parts.push_back(stored.make[i]);
            part[i] = i != join.at;
        }
        stored.make[join.at] = [parts, shape = join.shape] {
            std::vector<Tensor> made;
            for (const auto& make : parts) made.push_back(make());
            return join_rows(made, shape);
        };
        stored.placeholders[join.at] = {
            join.name, tensor_placeholder(join.shape, stored.placeholders[join.at].second.dtype())};
    }
    ModelTensors out;
    for (size_t i : layer_order(stored.placeholders))
        if (!part[i]) {
            out.placeholders.push_back(std::move(stored.placeholders[i]));
            out.make.push_back(std::move(stored.make[i]));
        }
    return out;
}

// What load() and load_streamed() share: the common state with the model's placeholders, how to
// make them, and whether the checkpoint holds optimizer state.
struct Opened {
    fs::path iter;
    DcpMetadata meta;
    PyValue common;
    CheckpointState state;  // model tensors: placeholders
    std::vector<std::function<Tensor()>> make;
    bool has_optimizer = false;
};
// `verify`: --verify-integrity's check of the files against integrity.json, before any is read.
Opened open_checkpoint(const fs::path& dir, bool verify) {
    const LatestIteration latest = latest_iteration(dir);
    if (verify) verify_integrity_manifest(latest.dir);
    Opened o;
    o.iter = latest.dir;
    o.meta = read_dcp_metadata(o.iter / kDcpMetadataName);
    o.common = read_common(o.iter, o.meta);
    o.state = common_from_py(o.common, (o.iter / kCommonName).string());
    if (latest.release) o.state.iteration = 0;
    ModelTensors model = model_tensors(o.iter, o.meta);
    for (auto& [name, t] : model.placeholders)
        o.state.model.emplace_back(std::move(name), ShardedTensor::whole(t));
    o.make = std::move(model.make);
    o.has_optimizer = o.common.find("optimizer") != nullptr ||
                      std::any_of(o.meta.entries.begin(), o.meta.entries.end(), [](const auto& e) {
                          return !e.bytes && unchained(e.fqn).starts_with(kOptimizerPrefix);
                      });
    return o;
}

// The optimizer moment a stored key holds ("<moment>.<stored key>" after kMomentPrefix), or
// none for other optimizer state.
std::optional<std::pair<std::string, std::string>> moment_of(const std::string& fqn) {
    if (!fqn.starts_with(kMomentPrefix)) return std::nullopt;
    const std::string rest = fqn.substr(std::strlen(kMomentPrefix));
    const size_t dot = rest.find('.');
    if (dot == std::string::npos) return std::nullopt;
    return std::pair{rest.substr(0, dot), rest.substr(dot + 1)};
}

}  // namespace

StreamedState TorchDistCheckpoint::load_streamed(const std::filesystem::path& dir) {
    Opened o = open_checkpoint(dir, verify_integrity_);
    auto make = std::make_shared<std::vector<std::function<Tensor()>>>(std::move(o.make));
    if (o.has_optimizer) {
        // The repeats a full load sets aside (the moments' names from the index alone).
        std::set<std::string> with_moments;
        for (const DcpEntry& e : o.meta.entries)
            if (auto moment = e.bytes ? std::nullopt : moment_of(unchained(e.fqn)))
                for (const auto& [name, t] :
                     unstack(moment->second,
                             tensor_placeholder(
                                 e.flattened_from.empty() ? e.size : e.flattened_from, e.dtype)))
                    with_moments.insert(name);
        const std::vector<size_t> repeats =
            set_aside_repeats(o.state, with_moments, [&](size_t i) { return (*make)[i](); });
        for (size_t k = repeats.size(); k-- > 0;)
            make->erase(make->begin() + std::ptrdiff_t(repeats[k]));
    }
    return {std::move(o.state), [make](size_t i) { return make->at(i)(); }};
}

CheckpointState TorchDistCheckpoint::load(const std::filesystem::path& dir) {
    Opened o = open_checkpoint(dir, verify_integrity_);
    const fs::path& iter = o.iter;
    CheckpointState& state = o.state;
    for (size_t i = 0; i < state.model.size(); ++i)
        state.model[i].second = ShardedTensor::whole(o.make[i]());
    NamedTensors moments;  // "<moment>.<core name>"
    bool buckets = false;  // core_v0.19's dp_reshardable layout (torch_dist_buckets.h)
    for (const DcpEntry& e : o.meta.entries) {
        // A chained optimizer's moments: its parts' keys behind "chained_<i>.".
        const std::string fqn = unchained(e.fqn);
        if (e.bytes || !fqn.starts_with(kOptimizerPrefix)) continue;
        if (fqn.starts_with(kBucketStatePrefix)) {
            buckets = true;
            continue;
        }
        const auto moment = moment_of(fqn);
        if (!moment) {
            if (state.optimizer_not_loaded.empty())
                state.optimizer_not_loaded =
                    str("not supported yet: optimizer state ", e.fqn, " in ", iter.string());
            continue;
        }
        // The distributed optimizer's f32 values (core_v0.13: fp32_param, core_v0.19's
        // fully_reshardable: param) are the masters, the model's own in an fp32 run.
        const std::string kind =
            moment->first == kFullyReshardableParamName ? std::string(kMasterName) : moment->first;
        if (kind == kMasterName && !bool_arg(state.args, "fp16") && !bool_arg(state.args, "bf16"))
            continue;
        Tensor t = DcpTensorReader(iter, e).read_all();
        if (!e.flattened_from.empty()) t = unflatten(t, e.flattened_from, e.fqn);
        for (auto& [name, piece] : unstack(moment->second, t))
            moments.emplace_back(kind + "." + name, piece);
    }
    join_parts(moments, iter.string());
    PyValue& common = o.common;
    if (buckets && state.optimizer_not_loaded.empty()) {
        try {
            NamedTensors model;
            for (const auto& [name, t] : state.model) model.emplace_back(name, t.local);
            BucketState b = read_bucket_state(iter, o.meta, model, state.args);
            for (auto& m : b.moments) moments.push_back(std::move(m));
            common.dict_ref().set("optimizer", std::move(b.optimizer));
        } catch (const Error& e) {
            state.optimizer_not_loaded = e.what();
        }
    }
    if (o.has_optimizer) {
        std::set<std::string> with_moments;
        for (const auto& [key, t] : moments)
            if (const size_t dot = key.find('.'); dot != std::string::npos)
                with_moments.insert(key.substr(dot + 1));
        set_aside_repeats(state, with_moments,
                          [&](size_t i) { return state.model[i].second.local; });
    }
    // An optimizer layout not read yet leaves the model loadable (generation, conversion);
    // resuming training with the optimizer reports the reason.
    if (o.has_optimizer && state.optimizer_not_loaded.empty()) {
        try {
            state.optimizer =
                optimizer_from_py(common, moments, state.model, state.iteration, iter.string());
        } catch (const Error& e) {
            state.optimizer_not_loaded = e.what();
        }
    }
    return state;
}

}  // namespace mt::plugins::torch_dist
