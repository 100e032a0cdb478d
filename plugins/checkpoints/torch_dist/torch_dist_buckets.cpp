#include "torch_dist_buckets.h"

#include <cctype>
#include <map>
#include <optional>

#include "dcp_storage.h"
#include "distrib_optim.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/model.h"
#include "torch_dist_flattened.h"
#include "torch_dist_optimizer.h"

namespace mt::plugins::torch_dist {

namespace {

using io::PyKind;
using io::PyValue;

constexpr const char* kKinds[] = {"param", "exp_avg", "exp_avg_sq"};

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

// The ShardedObject "<prefix>dp_group_idx_0.<name>" (stored as ".../shard_0_1"), or null.
const DcpEntry* group_object(const DcpMetadata& meta, const std::string& name) {
    for (const DcpEntry& e : meta.entries)
        if (e.bytes &&
            e.fqn.starts_with(std::string(kBucketStatePrefix) + "dp_group_idx_0." + name + "/"))
            return &e;
    return nullptr;
}

// A ShardedObject's value: the stored object is a one-item list holding it.
PyValue object_value(const fs::path& iter, const DcpEntry& e) {
    PyValue list = read_dcp_object(iter, e);
    MT_CHECK(list.kind() == PyKind::list && list.items().size() == 1, iter.string(), ": ",
             e.fqn.substr(0, 200), " holds ", io::short_repr(list, 80), ", not a one-item list");
    return list.items()[0];
}

}  // namespace

BucketState read_bucket_state(const fs::path& iter, const DcpMetadata& meta,
                              const NamedTensors& model, const CheckpointArgs& args) {
    const std::string where = iter.string();
    // (gbuf, dtype) -> bucket -> kind -> entry.
    std::map<std::pair<int64_t, std::string>,
             std::map<int64_t, std::map<std::string, const DcpEntry*>>>
        buffers;
    for (const DcpEntry& e : meta.entries) {
        if (e.bytes || !e.fqn.starts_with(kBucketStatePrefix)) continue;
        const auto k = bucket_key(e.fqn.substr(std::char_traits<char>::length(kBucketStatePrefix)));
        MT_CHECK(k, "not supported yet: distributed-optimizer state ", e.fqn.substr(0, 200), " in ",
                 where);
        MT_CHECK(k->group == 0, "not supported yet: core_v0.19's ", kDpReshardable,
                 " distributed-optimizer state of several tensor- or pipeline-parallel ranks (",
                 e.fqn.substr(0, 200), ") in ", where,
                 "; Megatron core_v0.19 saves a layout read here with "
                 "--dist-ckpt-optim-fully-reshardable");
        buffers[{k->gbuf, k->dtype}][k->bucket][k->kind] = &e;
    }
    MT_CHECK(buffers.size() == 1 && buffers.begin()->first.first == 0,
             "not supported yet: core_v0.19's ", kDpReshardable, " distributed-optimizer state of ",
             buffers.size(),
             " gradient buffers (model chunks, several dtypes or MoE experts' buffers) in ", where);
    NamedTensors params;  // the buffer's parameters, in Megatron's order
    for (const auto& [name, t] : model) {
        if (megatron_buffer(name)) continue;  // no optimizer state
        MT_CHECK(!megatron_expert_parameter(name), "not supported yet: core_v0.19's ",
                 kDpReshardable, " distributed-optimizer state of MoE experts (", name, ") in ",
                 where);
        params.emplace_back(name, t);
    }
    MT_CHECK(!params.empty(), where, ": distributed-optimizer state but no parameters");
    const auto& [gbuf, buckets] = *buffers.begin();
    // Megatron keys a buffer by (param dtype, grad dtype); grads are f32 here.
    const std::string dtype =
        str("(torch.", io::torch_dtype_global(params[0].second.dtype()).object_ref().name,
            ", torch.float32)");
    MT_CHECK(gbuf.second == dtype, "not supported yet: core_v0.19's ", kDpReshardable,
             " state of a gradient buffer of ", gbuf.second.substr(0, 100), " in ", where, " for ",
             dtype_name(params[0].second.dtype()), " weights (read: ", dtype, ")");
    // The buckets one after another, each without its end padding, are the buffer's state as
    // get_parameter_state_dp_zero gathers it.
    PyValue tensors = PyValue::dict();
    int64_t numel = 0;
    for (const char* kind : kKinds) {
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
        Tensor world = Tensor::empty({n}, DType::f32);
        int64_t at = 0;
        for (const Tensor& p : parts) {
            world.slice(0, at, at + p.numel()).copy_from(p);
            at += p.numel();
        }
        numel = n;
        tensors.dict_ref().set(kind, PyValue::tensor(world));
    }
    tensors.dict_ref().set("numel_unpadded", PyValue::integer(numel));
    const int64_t dp = int_arg(args, "data_parallel_size").value_or(1);
    const std::vector<torch_ckpt::BufferMoments> moments =
        torch_ckpt::buffer_moments(tensors, params, args, dp, where);
    BucketState out;
    for (size_t k = 0; k < params.size(); ++k) {
        const std::string& name = params[k].first;
        out.moments.emplace_back("exp_avg." + name, moments[k].exp_avg);
        out.moments.emplace_back("exp_avg_sq." + name, moments[k].exp_avg_sq);
        if (moments[k].main_param.defined())
            out.moments.emplace_back(std::string(kMasterName) + "." + name, moments[k].main_param);
    }
    // DistributedOptimizer.state_dict()'s entries are ShardedObjects of this layout.
    const DcpEntry* groups = group_object(meta, "optimizer");
    MT_CHECK(groups, where, ": ", kDpReshardable, " distributed-optimizer state without its ",
             kBucketStatePrefix, "dp_group_idx_0.optimizer");
    out.optimizer = PyValue::dict();
    out.optimizer.dict_ref().set("optimizer", object_value(iter, *groups));
    if (const DcpEntry* scaler = group_object(meta, "grad_scaler"))
        out.optimizer.dict_ref().set("grad_scaler", object_value(iter, *scaler));
    out.optimizer.dict_ref().set("param_state_sharding_type", PyValue::string(kDpReshardable));
    return out;
}

}  // namespace mt::plugins::torch_dist
