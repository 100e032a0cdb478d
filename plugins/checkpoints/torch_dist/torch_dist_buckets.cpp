#include "torch_dist_buckets.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <tuple>

#include "dcp_storage.h"
#include "distrib_optim.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/model.h"
#include "mt/parallel/pipeline_layers.h"
#include "torch_dist_flattened.h"
#include "torch_dist_optimizer.h"
#include "torch_state.h"

namespace mt::plugins::torch_dist {

namespace {

using io::PyKind;
using io::PyValue;

// A bucket tensor's key after kBucketStatePrefix:
// "dp_group_idx_<g>.gbuf_idx_<b>.dtype_<dtype>.bucket_idx_<k>.<kind>".
struct BucketKey {
    int64_t group = 0, gbuf = 0, bucket = 0;
    std::string dtype, kind;
};

// The number after `tag` at `at` in `s` (moving `at` past it), or none.
std::optional<int64_t> number_after(const std::string& s, size_t& at, std::string_view tag) {
    if (s.compare(at, tag.size(), tag) != 0) return std::nullopt;
    size_t end = at + tag.size();
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == at + tag.size() || end - at - tag.size() > 9) return std::nullopt;
    const int64_t n = std::stoll(s.substr(at + tag.size(), end - at - tag.size()));
    at = end;
    return n;
}

std::optional<BucketKey> bucket_key(const std::string& rest) {
    BucketKey k;
    size_t at = 0;
    const auto group = number_after(rest, at, "dp_group_idx_");
    if (!group || rest.compare(at, 1, ".") != 0) return std::nullopt;
    ++at;
    const auto gbuf = number_after(rest, at, "gbuf_idx_");
    if (!gbuf || rest.compare(at, 7, ".dtype_") != 0) return std::nullopt;
    at += 7;
    // The dtype is Python's print of a tuple, "(torch.float32, torch.float32)".
    const size_t close = rest.find(").bucket_idx_", at);
    if (close == std::string::npos) return std::nullopt;
    k.dtype = rest.substr(at, close + 1 - at);
    at = close + 2;
    const auto bucket = number_after(rest, at, "bucket_idx_");
    if (!bucket || rest.compare(at, 1, ".") != 0) return std::nullopt;
    k.group = *group;
    k.gbuf = *gbuf;
    k.bucket = *bucket;
    k.kind = rest.substr(at + 1);
    return k;
}

// What the keys of model-parallel rank `group` start with: its bucket tensors are
// "<that>gbuf_idx_0.dtype_<dtype>.bucket_idx_<k>.<kind>", its objects "<that><name>".
std::string group_key(const std::string& chain, int64_t group) {
    return str(chain, kBucketStatePrefix, "dp_group_idx_", group, ".");
}

// The ShardedObject "<chain><prefix>dp_group_idx_0.<name>" (stored as ".../shard_0_1"), or
// null; `chain`: "" or a chained optimizer's "chained_<i>.".
const DcpEntry* group_object(const DcpMetadata& meta, const std::string& chain,
                             const std::string& name) {
    const std::string key = group_key(chain, 0) + name + "/";
    for (const DcpEntry& e : meta.entries)
        if (e.bytes && e.fqn.starts_with(key)) return &e;
    return nullptr;
}

// A ShardedObject's value: the stored object is a one-item list holding it.
PyValue object_value(const fs::path& iter, const DcpEntry& e) {
    PyValue list = read_dcp_object(iter, e);
    MT_CHECK(list.kind() == PyKind::list && list.items().size() == 1, iter.string(), ": ",
             e.fqn.substr(0, 200), " holds ", io::short_repr(list, 80), ", not a one-item list");
    return list.items()[0];
}

// How a bucket's key names its buffer's dtypes: Python's print of (param dtype, grad dtype), the
// grads f32 here.
std::string bucket_dtype(DType param_dtype) {
    return str("(torch.", io::torch_dtype_global(param_dtype).object_ref().name,
               ", torch.float32)");
}

// A buffer's buckets: bucket index -> state kind -> entry.
using Buckets = std::map<int64_t, std::map<std::string, const DcpEntry*>>;

// The buckets one after another, each without its end padding: the buffer's state as
// get_parameter_state_dp_zero gathers it.
torch_ckpt::BufferWorld buffer_state(const fs::path& iter, const Buckets& buckets) {
    const std::string where = iter.string();
    auto world = [&](const char* kind) {
        std::vector<Tensor> parts;
        int64_t expected_bucket = 0, n = 0;
        for (const auto& [index, kinds] : buckets) {
            MT_CHECK(index == expected_bucket++, where, ": ", kDpReshardable, " bucket ",
                     expected_bucket - 1, " of the distributed optimizer's state is missing");
            const auto found = kinds.find(kind);
            MT_CHECK(found != kinds.end(), where, ": no '", kind, "' in ", kDpReshardable,
                     " bucket ", index, " of the distributed optimizer's state");
            const DcpEntry& e = *found->second;
            MT_CHECK(e.size.size() == 1 && e.dtype == DType::f32, e.fqn.substr(0, 200), " in ",
                     where, " is ", dtype_name(e.dtype), " ", shape_str(e.size),
                     ", not a flat f32 bucket");
            parts.push_back(DcpTensorReader(iter, e).read_all());
            n += e.size[0];
        }
        Tensor out = Tensor::empty({n}, DType::f32);
        int64_t at = 0;
        for (const Tensor& p : parts) {
            out.slice(0, at, at + p.numel()).copy_from(p);
            at += p.numel();
        }
        return out;
    };
    return {world("param"), world("exp_avg"), world("exp_avg_sq")};
}

// A tensor-parallel rank's piece of a parameter: the ranges [first, second) of dimension `dim`
// of the whole tensor it holds, one after another (Megatron's sharded state dict's boxes of the
// rank; SwiGLU's fc1: its gate rows, then its up rows).
struct RankPiece {
    int64_t dim = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;
};

// Each model tensor's stored boxes (the DCP chunks, in the tensor's own coordinates), by core
// name: the boxes Megatron's ranks saved, which a tensor-parallel split cuts along one dimension.
std::map<std::string, std::vector<ShardBox>> stored_boxes(const DcpMetadata& meta) {
    std::map<std::string, std::vector<ShardBox>> out;
    for (const DcpEntry& e : meta.entries) {
        if (e.bytes || unchained(e.fqn).starts_with("optimizer.")) continue;
        for (const StackedPiece& piece : stacked_pieces(e.fqn, e.size)) {
            const size_t lead = piece.leading.size();
            std::vector<ShardBox>& boxes = out[piece.name];
            for (const DcpChunk& c : e.chunks) {
                bool mine = c.offsets.size() == e.size.size();
                for (size_t d = 0; mine && d < lead; ++d)
                    mine = c.offsets[d] == piece.leading[d] && c.sizes[d] == 1;
                if (mine)
                    boxes.push_back(
                        {Shape(c.offsets.begin() + std::ptrdiff_t(lead), c.offsets.end()),
                         Shape(c.sizes.begin() + std::ptrdiff_t(lead), c.sizes.end())});
            }
        }
    }
    return out;
}

// Rank `rank`'s piece of `name` (whole shape `shape`) among `tp` ranks from its stored boxes:
// one box covering the tensor is replicated; otherwise the boxes cut one dimension, n of them in
// its order being n / tp per rank, rank r holding the r-th, (r + tp)-th, ...
RankPiece rank_piece(const std::string& name, const Shape& shape,
                     const std::vector<ShardBox>& boxes, int64_t tp, int64_t rank,
                     const std::string& where) {
    MT_CHECK(!boxes.empty(), where, ": no stored chunk of ", name);
    if (boxes.size() == 1 && boxes[0].size == shape)
        return {0, {{0, shape.empty() ? 1 : shape[0]}}};
    int64_t dim = -1;
    for (const ShardBox& b : boxes)
        for (size_t d = 0; d < shape.size(); ++d)
            if (b.size[d] != shape[d]) {
                MT_CHECK(dim < 0 || dim == int64_t(d), "not supported yet: ", name, " in ", where,
                         " is stored in boxes cut along several dimensions");
                dim = int64_t(d);
            }
    MT_CHECK(dim >= 0 && int64_t(boxes.size()) % tp == 0, "not supported yet: ", name, " in ",
             where, " is stored in ", boxes.size(), " chunks, not a split among ", tp,
             " tensor-parallel ranks");
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const ShardBox& b : boxes) ranges.emplace_back(b.offset[size_t(dim)], b.size[size_t(dim)]);
    std::sort(ranges.begin(), ranges.end());
    RankPiece piece{dim, {}};
    for (size_t k = size_t(rank); k < ranges.size(); k += size_t(tp))
        piece.ranges.emplace_back(ranges[k].first, ranges[k].first + ranges[k].second);
    return piece;
}

// The piece's values from the whole tensor: its ranges one after another.
Tensor cut(const Tensor& whole, const RankPiece& piece) {
    Shape shape = whole.shape();
    int64_t n = 0;
    for (const auto& [begin, end] : piece.ranges) n += end - begin;
    if (!shape.empty()) shape[size_t(piece.dim)] = n;
    Tensor out = Tensor::empty(shape, whole.dtype());
    int64_t at = 0;
    for (const auto& [begin, end] : piece.ranges) {
        out.slice(piece.dim, at, at + end - begin).copy_from(whole.slice(piece.dim, begin, end));
        at += end - begin;
    }
    return out;
}

// The inverse: the piece's values `values` placed into `whole`.
void place(Tensor& whole, const RankPiece& piece, const Tensor& values) {
    int64_t at = 0;
    for (const auto& [begin, end] : piece.ranges) {
        whole.slice(piece.dim, begin, end).copy_from(values.slice(piece.dim, at, at + end - begin));
        at += end - begin;
    }
}

// The pipeline stage of `split` whose buffer holds the parameter `name`: a decoder layer's by
// its index, the embeddings the first's, the final norm and the output layer the last's; -1 for
// other names.
int stage_of(const std::string& name, const parallel::PipelineSplit& split) {
    if (const auto l = decoder_layer_tensor(name)) {
        for (int stage = 0; stage < split.stages; ++stage) {
            const parallel::StageLayers s = parallel::pipeline_stage_layers(split, stage);
            if (l->layer >= s.first && l->layer < s.first + s.count) return stage;
        }
        return -1;
    }
    if (name.starts_with("embedding.")) return 0;
    if (name.starts_with("decoder.final_layernorm.") || name.starts_with("output_layer."))
        return split.stages - 1;
    return -1;
}

// The chained optimizer a key belongs to ("chained_<i>." in front: i; none: 0; -1: a number too
// long to be one) and the key without it.
std::pair<int64_t, std::string> chain_of(const std::string& fqn) {
    const std::string rest = unchained(fqn);
    if (rest.size() == fqn.size()) return {0, fqn};
    const std::string digits = fqn.substr(8, fqn.size() - rest.size() - 9);  // "chained_<i>."
    return {digits.size() > 9 ? -1 : std::stoll(digits), rest};
}

// The expert index of an expert's tensor, or -1.
int64_t expert_of(const std::string& name) {
    const auto l = decoder_layer_tensor(name);
    return l && l->expert ? *l->expert : -1;
}

// Where a layer's tensor comes among the layer's parameters as Megatron's modules register them
// (TransformerLayer: input_layernorm, self_attention: linear_proj, linear_qkv, q/k_layernorm,
// pre_mlp_layernorm, mlp: linear_fc1, linear_fc2 or router, experts, shared_experts), for the
// local spec (the norms apart, stored under Transformer Engine's names) or Transformer Engine's
// (a norm inside the linear after it); -1 for a tensor not placed here.
int layer_slot(const std::string& rest, bool local) {
    // (pattern, slot under the local spec, slot under Transformer Engine's)
    static const std::tuple<const char*, int, int> kSlots[] = {
        {"input_layernorm.", 0, 0},
        {"self_attention.linear_qkv.layer_norm_", 1, 3},
        {"self_attention.linear_proj.", 2, 2},
        {"self_attention.linear_qkv.", 3, 4},
        {"self_attention.q_layernorm.", 4, 5},
        {"self_attention.k_layernorm.", 5, 6},
        {"pre_mlp_layernorm.", 6, 7},
        {"mlp.linear_fc1.layer_norm_", 7, 11},
        {"mlp.router.", 8, 8},
        {"mlp.experts.", 9, 9},
        {"mlp.shared_experts.", 10, 10},
        {"mlp.linear_fc1.", 11, 12},
        {"mlp.linear_fc2.", 12, 13},
    };
    for (const auto& [pattern, local_slot, te_slot] : kSlots)
        if (rest.starts_with(pattern)) return local ? local_slot : te_slot;
    return -1;
}

// Megatron's registration order of the parameters `names` (whose stored order a multi-rank save
// scrambles), as their positions: the embeddings, the decoder layers (each as layer_slot places
// its tensors; SequentialMLP's experts each with its tensors together, --moe-grouped-gemm's per
// linear), the final norm, the output layer; weights before biases. A tensor it cannot place is
// an mt::Error naming it.
std::vector<size_t> registration_order(const std::vector<std::string>& names,
                                       const CheckpointArgs& args, const std::string& where) {
    const ArgValue* impl = find_arg(args, "transformer_impl");
    const std::string* impl_name = impl ? std::get_if<std::string>(impl) : nullptr;
    const bool local = impl_name && *impl_name == "local";
    const bool grouped = bool_arg(args, "moe_grouped_gemm");
    using Key = std::array<int64_t, 6>;
    auto key_of = [&](const std::string& name) {
        const int64_t bias = name.ends_with("bias") ? 1 : 0;
        if (name == "embedding.word_embeddings.weight") return Key{0, 0, 0, 0, 0, 0};
        if (name == "embedding.position_embeddings.weight") return Key{0, 1, 0, 0, 0, 0};
        if (name.starts_with("decoder.final_layernorm.")) return Key{2, 0, 0, 0, 0, bias};
        if (name.starts_with("output_layer.")) return Key{3, 0, 0, 0, 0, bias};
        const auto l = decoder_layer_tensor(name);
        if (const int slot = l ? layer_slot(l->rest, local) : -1; slot >= 0) {
            const int64_t fc2 = l->rest.find("linear_fc2") != std::string::npos;
            if (l->expert)
                return grouped ? Key{1, l->layer, slot, fc2, *l->expert, bias}
                               : Key{1, l->layer, slot, *l->expert, fc2, bias};
            return Key{1, l->layer, slot, 0, 0, bias};
        }
        MT_FAIL("not supported yet: core_v0.19's ", kDpReshardable,
                " distributed-optimizer state of ", name, " in ", where,
                " (its place among Megatron's parameters)");
    };
    std::vector<std::pair<Key, size_t>> keys;
    for (size_t i = 0; i < names.size(); ++i) keys.emplace_back(key_of(names[i]), i);
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<size_t> order;
    for (const auto& [key, i] : keys) order.push_back(i);
    return order;
}

// What keeps the layout from being read or written for a run with `args` whose parameters are
// `names`, or empty.
std::string layout_refusal(const CheckpointArgs& args, const std::vector<std::string>& names,
                           const std::string& where) {
    const int64_t pp = int_arg(args, "pipeline_model_parallel_size").value_or(1);
    if (pipeline_split_of(args, pp).virtual_stages != 1)
        return str("not supported yet: core_v0.19's ", kDpReshardable,
                   " distributed-optimizer state of virtual pipeline stages in ", where);
    try {
        registration_order(names, args, where);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

std::string bucket_layout_refusal(const CheckpointArgs& args,
                                  const std::vector<std::string>& names) {
    // (Adam's moments are what the buckets hold here.)
    const ArgValue* optimizer = find_arg(args, "optimizer");
    const std::string* type = optimizer ? std::get_if<std::string>(optimizer) : nullptr;
    if (type && *type != "adam")
        return str("not supported yet: core_v0.19's ", kDpReshardable, " state of the ",
                   type->substr(0, 40), " optimizer");
    return layout_refusal(args, names, "this run");
}

BucketWrite bucket_state_to_write(const OptimizerCheckpoint& o, const CheckpointArgs& args) {
    MT_CHECK(o.buckets && o.buckets->values.size() == o.params.size(),
             "torch_dist: the distributed optimizer's state in ", kDpReshardable,
             " without its pieces");
    MT_CHECK(o.type == "adam", "not supported yet: core_v0.19's ", kDpReshardable, " state of the ",
             o.type, " optimizer");
    const BucketShare& share = *o.buckets;
    const std::vector<torch_ckpt::OptimizerChain> chains = torch_ckpt::optimizer_chains(o);
    const bool chained = chains.size() > 1;
    BucketWrite out;
    for (size_t c = 0; c < chains.size(); ++c) {
        const std::vector<size_t>& members = chains[c].members;
        const BucketShare::Part& part = chained && c == 1 ? share.experts : share.dense;
        if (!part.main || members.empty()) continue;
        std::vector<std::string> names;
        for (size_t i : members) names.push_back(o.params[i].name);
        const std::string refusal = layout_refusal(args, names, "this checkpoint");
        MT_CHECK(refusal.empty(), refusal);
        NamedTensors model;
        std::vector<torch_ckpt::BufferMoments> state;
        for (size_t k : registration_order(names, args, "this checkpoint")) {
            const OptimizerParamState& p = o.params[members[k]];
            model.emplace_back(p.name, share.values[members[k]]);
            state.push_back({p.exp_avg, p.exp_avg_sq, p.main_param});
        }
        const torch_ckpt::BufferBuckets buffer =
            torch_ckpt::buffer_world(model, state, args, part.dp_size);
        const DType dtype = model[0].second.dtype();
        const std::string chain = chained ? str("chained_", c, ".") : "";
        const std::string group = group_key(chain, part.group);
        const std::string prefix = str(group, "gbuf_idx_0.dtype_", bucket_dtype(dtype), ".");
        int64_t at = 0;  // where the bucket starts in the world tensors
        for (size_t b = 0; b < buffer.numel.size(); ++b) {
            const int64_t rank_numel = buffer.numel[b] / part.dp_size;
            const int64_t begin = part.dp_rank * rank_numel;
            const int64_t end = std::min(begin + rank_numel, buffer.numel_unpadded[b]);
            for (const auto& [kind, world] : {std::pair{"param", &buffer.world.param},
                                              std::pair{"exp_avg", &buffer.world.exp_avg},
                                              std::pair{"exp_avg_sq", &buffer.world.exp_avg_sq}})
                if (begin < end)
                    out.tensors.push_back({str(prefix, "bucket_idx_", b, ".", kind),
                                           {buffer.numel_unpadded[b]},
                                           {{{begin}, world->slice(0, at + begin, at + end)}},
                                           {}});
            at += buffer.numel_unpadded[b];
        }
        if (part.dp_rank != 0) continue;
        // DistributedOptimizer.state_dict()'s entries, and the buckets' sizes per buffer.
        const io::PyValue optimizer = torch_ckpt::distributed_optimizer_to_py(chains[c].optimizer);
        out.objects.emplace_back(group + "optimizer", optimizer["optimizer"]);
        if (o.grad_scaler)
            out.objects.emplace_back(group + "grad_scaler",
                                     torch_ckpt::grad_scaler_to_py(*o.grad_scaler));
        auto per_bucket = [&](const std::vector<int64_t>& numels) {
            io::PyValue sizes = io::PyValue::list();
            for (int64_t n : numels) sizes.items().push_back(io::PyValue::integer(n));
            io::PyValue by_dtype = io::PyValue::dict();
            by_dtype.dict_ref().set(torch_ckpt::buffer_dtype_key(dtype), std::move(sizes));
            return io::PyValue::list({std::move(by_dtype)});
        };
        out.objects.emplace_back(group + "per_bucket_numel", per_bucket(buffer.numel));
        out.objects.emplace_back(group + "per_bucket_numel_unpadded",
                                 per_bucket(buffer.numel_unpadded));
    }
    return out;
}

BucketState read_bucket_state(const fs::path& iter, const DcpMetadata& meta,
                              const NamedTensors& model, const CheckpointArgs& args) {
    const std::string where = iter.string();
    const int64_t tp = int_arg(args, "tensor_model_parallel_size").value_or(1);
    const int64_t pp = int_arg(args, "pipeline_model_parallel_size").value_or(1);
    const int64_t ep = int_arg(args, "expert_model_parallel_size").value_or(1);
    const int64_t etp = int_arg(args, "expert_tensor_parallel_size").value_or(tp);
    const int64_t cp = int_arg(args, "context_parallel_size").value_or(1);
    const int64_t dp = int_arg(args, "data_parallel_size").value_or(1);
    // Chained optimizer -> its rank in the model-parallel group it shards for -> (gbuf, dtype)
    // -> its buckets.
    std::map<int64_t, std::map<int64_t, std::map<std::pair<int64_t, std::string>, Buckets>>> chains;
    for (const DcpEntry& e : meta.entries) {
        if (e.bytes) continue;
        const auto [chain, fqn] = chain_of(e.fqn);
        if (!fqn.starts_with(kBucketStatePrefix)) continue;
        const auto k = bucket_key(fqn.substr(std::char_traits<char>::length(kBucketStatePrefix)));
        MT_CHECK(k && k->group >= 0 && chain >= 0 && chain < 2,
                 "not supported yet: distributed-optimizer state ", e.fqn.substr(0, 200), " in ",
                 where);
        chains[chain][k->group][{k->gbuf, k->dtype}][k->bucket][k->kind] = &e;
    }
    // One optimizer, or (experts apart: expert parallelism, or their own tensor parallelism)
    // the dense parameters' and the experts', chained.
    const bool chained = chains.size() > 1;
    MT_CHECK(!chained || (chains.count(0) && chains.count(1)), where, ": ", kDpReshardable,
             " state of a chained optimizer without its dense or its experts' part");
    const parallel::PipelineSplit split = pipeline_split_of(args, pp);
    MT_CHECK(split.virtual_stages == 1, "not supported yet: core_v0.19's ", kDpReshardable,
             " distributed-optimizer state of virtual pipeline stages in ", where);
    // Several stages tying the word embeddings to the output layer: the last keeps a copy, with
    // state of its own in its buffer (the same as the first stage's), not in the model.
    const bool stage_copy = pp > 1 && !bool_arg(args, "untie_embeddings_and_output_weights");
    NamedTensors params;  // the buffers' parameters, in Megatron's order
    {
        std::vector<std::string> names;
        std::vector<size_t> at;
        for (size_t i = 0; i < model.size(); ++i)
            if (!megatron_buffer(model[i].first)) {  // (buffers: no state)
                names.push_back(model[i].first);
                at.push_back(i);
            }
        MT_CHECK(!names.empty(), where, ": distributed-optimizer state but no parameters");
        for (size_t k : registration_order(names, args, where)) params.push_back(model[at[k]]);
    }
    // Each parameter's pipeline stage and expert (-1: none), and the word embeddings' position.
    std::vector<int> stages;
    std::vector<int64_t> expert_index;
    int64_t experts = 0;
    size_t embedding = params.size();
    for (size_t k = 0; k < params.size(); ++k) {
        const std::string& name = params[k].first;
        stages.push_back(pp > 1 ? stage_of(name, split) : 0);
        expert_index.push_back(expert_of(name));
        MT_CHECK(stages.back() >= 0, "not supported yet: core_v0.19's ", kDpReshardable,
                 " distributed-optimizer state of ", name, " in ", where,
                 " (which pipeline stage holds it)");
        MT_CHECK(!megatron_expert_parameter(name) || expert_index.back() >= 0,
                 "not supported yet: core_v0.19's ", kDpReshardable,
                 " distributed-optimizer state of ", name, " in ", where);
        experts = std::max(experts, expert_index.back() + 1);
        if (name == "embedding.word_embeddings.weight") embedding = k;
    }
    MT_CHECK(experts % ep == 0, where, ": ", experts, " experts over ", ep,
             " expert-parallel ranks");
    MT_CHECK(!stage_copy || embedding < params.size(), where,
             ": tied embeddings but no embedding.word_embeddings.weight");
    const std::string dtype = bucket_dtype(params[0].second.dtype());
    const std::map<std::string, std::vector<ShardBox>> boxes = stored_boxes(meta);
    struct Whole {
        Tensor exp_avg, exp_avg_sq, main_param;
    };
    std::vector<Whole> whole(params.size());
    for (const auto& [chain, groups] : chains) {
        const bool expert_part = chained && chain == 1;
        // The ranks a part's state is cut for: (tensor, pipeline) for the dense parameters,
        // (expert tensor, expert, pipeline) for the experts, each sharded over the rest.
        const int64_t part_tp = expert_part ? etp : tp;
        const int64_t part_ep = expert_part ? ep : 1;
        const int64_t ranks = part_tp * part_ep * pp;
        const int64_t part_dp = expert_part ? tp * cp * dp / (ep * etp) : dp * cp;
        MT_CHECK(groups.rbegin()->first < ranks, "not supported yet: core_v0.19's ", kDpReshardable,
                 " distributed-optimizer state of dp_group_idx_", groups.rbegin()->first, " in ",
                 where, ": the args say ", part_tp,
                 expert_part ? " expert-tensor-parallel x " : " tensor-parallel x ",
                 expert_part ? str(part_ep, " expert-parallel x ") : "", pp,
                 " pipeline-parallel ranks");
        MT_CHECK(int64_t(groups.size()) == ranks, where, ": ", kDpReshardable,
                 " distributed-optimizer state of ", groups.size(), " model-parallel ranks",
                 chained ? str(" (chained part ", chain, ")") : "", ", the args say ", ranks);
        for (const auto& [rank, buffers] : groups) {
            MT_CHECK(buffers.size() == 1 && buffers.begin()->first.first == 0,
                     "not supported yet: core_v0.19's ", kDpReshardable,
                     " distributed-optimizer state of ", buffers.size(),
                     " gradient buffers (model chunks or several dtypes) in ", where);
            const auto& [gbuf, buckets] = *buffers.begin();
            MT_CHECK(gbuf.second == dtype, "not supported yet: core_v0.19's ", kDpReshardable,
                     " state of a gradient buffer of ", gbuf.second.substr(0, 100), " in ", where,
                     " for ", dtype_name(params[0].second.dtype()), " weights (read: ", dtype, ")");
            const int64_t tp_rank = rank % part_tp, ep_rank = rank / part_tp % part_ep,
                          stage = rank / (part_tp * part_ep);
            const int64_t local_experts = experts / ep;
            // Whether the part's rank holds params[k].
            auto holds = [&](size_t k) {
                const int64_t e = expert_index[k];
                if (stages[k] != stage) return false;
                if (!chained) return true;
                if (!expert_part) return e < 0;
                return e >= ep_rank * local_experts && e < (ep_rank + 1) * local_experts;
            };
            std::vector<size_t> held;
            std::vector<RankPiece> pieces;
            NamedTensors local;
            auto hold = [&](size_t k, const std::string& name) {
                const auto found = boxes.find(params[k].first);
                MT_CHECK(found != boxes.end(), "not supported yet: core_v0.19's ", kDpReshardable,
                         " distributed-optimizer state of ", params[k].first, " in ", where,
                         " (not stored under its own name)");
                pieces.push_back(rank_piece(params[k].first, params[k].second.shape(),
                                            found->second, part_tp, tp_rank, where));
                local.emplace_back(name, cut(params[k].second, pieces.back()));
            };
            for (size_t k = 0; k < params.size(); ++k)
                if (holds(k)) {
                    held.push_back(k);
                    hold(k, params[k].first);
                }
            if (stage_copy && !expert_part && stage == pp - 1)
                hold(embedding, "output_layer.weight");  // its moments are the embeddings' again
            const std::vector<torch_ckpt::BufferMoments> moments = torch_ckpt::buffer_moments(
                buffer_state(iter, buckets), local, args, part_dp,
                str(where, " (", chained ? str("chained part ", chain, ", ") : "",
                    "model-parallel rank ", rank, ")"));
            for (size_t j = 0; j < held.size(); ++j) {
                Whole& w = whole[held[j]];
                const Shape& shape = params[held[j]].second.shape();
                if (!w.exp_avg.defined()) {
                    w.exp_avg = Tensor::zeros(shape, DType::f32);
                    w.exp_avg_sq = Tensor::zeros(shape, DType::f32);
                    if (moments[j].main_param.defined())
                        w.main_param = Tensor::zeros(shape, DType::f32);
                }
                place(w.exp_avg, pieces[j], moments[j].exp_avg);
                place(w.exp_avg_sq, pieces[j], moments[j].exp_avg_sq);
                if (w.main_param.defined()) place(w.main_param, pieces[j], moments[j].main_param);
            }
        }
    }
    BucketState out;
    for (size_t k = 0; k < params.size(); ++k) {
        const std::string& name = params[k].first;
        MT_CHECK(whole[k].exp_avg.defined(), where, ": no ", kDpReshardable,
                 " distributed-optimizer state holds ", name);
        out.moments.emplace_back("exp_avg." + name, whole[k].exp_avg);
        out.moments.emplace_back("exp_avg_sq." + name, whole[k].exp_avg_sq);
        if (whole[k].main_param.defined())
            out.moments.emplace_back(std::string(kMasterName) + "." + name, whole[k].main_param);
    }
    // DistributedOptimizer.state_dict()'s entries are ShardedObjects of this layout (each
    // model-parallel rank's alike: rank 0's), a chain's per part.
    auto part_optimizer = [&](const std::string& chain) {
        const DcpEntry* groups = group_object(meta, chain, "optimizer");
        MT_CHECK(groups, where, ": ", kDpReshardable, " distributed-optimizer state without its ",
                 chain, kBucketStatePrefix, "dp_group_idx_0.optimizer");
        PyValue part = PyValue::dict();
        part.dict_ref().set("optimizer", object_value(iter, *groups));
        if (const DcpEntry* scaler = group_object(meta, chain, "grad_scaler"))
            part.dict_ref().set("grad_scaler", object_value(iter, *scaler));
        part.dict_ref().set("param_state_sharding_type", PyValue::string(kDpReshardable));
        return part;
    };
    if (!chained) {
        out.optimizer = part_optimizer("");
    } else {
        out.optimizer = PyValue::dict();
        for (int64_t c = 0; c < 2; ++c)
            out.optimizer.dict_ref().set(PyValue::integer(c),
                                         part_optimizer(str("chained_", c, ".")));
    }
    return out;
}

}  // namespace mt::plugins::torch_dist
