#include "deepspeed_zero_shards.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;
using io::PyKind;
using io::PyValue;

namespace {

// zero_pp_rank_D_mp_rank_MM_optim_states.pt (bf16_ in front in a bf16 run), D = 0, 1, ...
std::vector<fs::path> shard_files(const fs::path& tag, int mp_rank) {
    std::map<int, fs::path> by_rank;
    for (const auto& entry : fs::directory_iterator(tag)) {
        const std::string name = entry.path().filename().string();
        const std::string plain = name.rfind("bf16_", 0) == 0 ? name.substr(5) : name;
        int dp = 0, mp = 0, n = 0;
        if (std::sscanf(plain.c_str(), "zero_pp_rank_%d_mp_rank_%d_optim_states.pt%n", &dp, &mp,
                        &n) == 2 &&
            size_t(n) == plain.size() && mp == mp_rank)
            by_rank[dp] = entry.path();
    }
    std::vector<fs::path> out;
    for (const auto& [dp, path] : by_rank) {
        MT_CHECK(dp == int(out.size()), tag.string(), ": the ZeRO shard of data-parallel rank ",
                 out.size(), " of model-parallel rank ", mp_rank, " is missing");
        out.push_back(path);
    }
    return out;
}

// A param_shapes entry (a torch.Size), its elements bounded so that offsets cannot overflow.
Shape shape_of(const PyValue& size, const std::string& what) {
    const Shape s = io::py_shape(size, what + ": a parameter shape");
    int64_t numel = 1;
    for (int64_t d : s) {
        MT_CHECK(d >= 0 && numel <= (int64_t(1) << 48) / std::max<int64_t>(d, 1), what,
                 ": a parameter of more than 2^48 elements or a negative dimension");
        numel *= d;
    }
    return s;
}

// The `g`th entry of a list the shard keeps per param group.
const PyValue& per_group(const PyValue& shard, const char* key, size_t g, const std::string& file) {
    const PyValue& list = shard[key];
    MT_CHECK(
        (list.kind() == PyKind::list || list.kind() == PyKind::tuple) && g < list.items().size(),
        file, ": '", key, "' has no entry for param group ", g);
    return list.items()[g];
}

// The torch optimizer state of param group `g` in a state_dict whose parameters are the flat
// groups (key g), or null.
const PyValue* group_state(const PyValue& optimizer, size_t g) {
    for (const auto& [k, v] : optimizer["state"].dict_ref().items)
        if (k.kind() == PyKind::integer && k.as_int() == int64_t(g)) return &v;
    return nullptr;
}

// A group's flat buffers (fp32 weights, Adam moments) joined over some of the shards, the
// padding of each cut off.
struct JoinedGroup {
    Tensor fp32, avg, avg_sq;
};

JoinedGroup join_group(const std::vector<PyValue>& shards, const std::vector<fs::path>& files,
                       size_t g, const std::vector<size_t>& ranks) {
    std::vector<Tensor> avg, avg_sq, fp32;
    int64_t real = 0;
    for (size_t d : ranks) {
        const PyValue& s = shards[d];
        const std::string file = files[d].string();
        const PyValue* own = group_state(s["base_optimizer_state"], g);
        MT_CHECK(own != nullptr, file, ": no optimizer state for param group ", g,
                 " (no step taken: resume with --no-load-optim)");
        avg.push_back((*own)["exp_avg"].as_tensor());
        avg_sq.push_back((*own)["exp_avg_sq"].as_tensor());
        fp32.push_back(per_group(s, "single_partition_of_fp32_groups", g, file).as_tensor());
        const int64_t padding = per_group(s, "group_paddings", g, file).as_int();
        MT_CHECK(avg.back().dtype() == DType::f32 && avg_sq.back().dtype() == DType::f32 &&
                     fp32.back().dtype() == DType::f32 &&
                     avg.back().numel() == fp32.back().numel() &&
                     avg_sq.back().numel() == fp32.back().numel() && padding >= 0 &&
                     padding <= fp32.back().numel(),
                 file, ": the partitions of param group ", g, " differ in size");
        real += fp32.back().numel() - padding;
    }
    auto join = [&](const std::vector<Tensor>& parts) {
        Tensor out = Tensor::empty({real}, DType::f32);
        int64_t at = 0;
        for (const Tensor& p : parts) {
            const int64_t n = std::min(p.numel(), real - at);
            out.slice(0, at, at + n).copy_from(p.contiguous().view({p.numel()}).slice(0, 0, n));
            at += n;
        }
        return out;
    };
    return {join(fp32), join(avg), join(avg_sq)};
}

// The parameters of param group `g` in the joined shards `ranks` by their param_slice_mappings:
// each name with its elements (a parameter cut between two ranks appears in both).
std::vector<std::pair<std::string, int64_t>> mapped_params(const std::vector<PyValue>& shards,
                                                           const std::vector<fs::path>& files,
                                                           size_t g,
                                                           const std::vector<size_t>& ranks) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (size_t d : ranks) {
        const std::string file = files[d].string();
        const PyValue& mappings = per_group(shards[d], "param_slice_mappings", g, file);
        MT_CHECK(mappings.kind() == PyKind::dict, file, ": param_slice_mappings of group ", g,
                 " is not a dict");
        for (const auto& [k, fragment] : mappings.dict_ref().items) {
            MT_CHECK(k.kind() == PyKind::string, file, ": a param_slice_mappings key of group ", g,
                     " is not a name");
            const PyValue* numel = fragment.find("numel");
            MT_CHECK(numel && numel->kind() == PyKind::integer && numel->as_int() >= 0, file,
                     ": the fragment of '", k.as_string().substr(0, 200), "' has no numel");
            if (!out.empty() && out.back().first == k.as_string())
                out.back().second += numel->as_int();
            else
                out.emplace_back(k.as_string(), numel->as_int());
        }
    }
    return out;
}

// DeepSpeed's expert names hold the expert's index on its expert-parallel rank in the
// optimizer's shards ("<layer>.deepspeed_experts.<j>.") and over the whole model in the expert
// files: <j> becomes first[<layer>] + j, and count[<layer>] at least j + 1.
std::string global_expert_name(const std::string& name, const std::map<std::string, int64_t>& first,
                               std::map<std::string, int64_t>& count) {
    static constexpr std::string_view kExperts = ".deepspeed_experts.";
    const size_t at = name.find(kExperts);
    if (at == std::string::npos) return name;
    const size_t begin = at + kExperts.size(), end = name.find('.', begin);
    int64_t j = -1;
    if (end != std::string::npos)
        std::sscanf(name.substr(begin, end - begin).c_str(), "%" SCNd64, &j);
    MT_CHECK(j >= 0 && j < (int64_t(1) << 30), "the expert name '", name.substr(0, 200),
             "' has no expert index");
    const std::string layer = name.substr(0, at);
    auto it = first.find(layer);
    count[layer] = std::max(count[layer], j + 1);
    return name.substr(0, begin) + std::to_string((it == first.end() ? 0 : it->second) + j) +
           name.substr(end);
}

}  // namespace

std::optional<std::vector<DeepSpeedParamGroup>> zero_param_groups(
    const fs::path& tag, int mp_rank, const PyValue& param_shapes,
    const std::function<std::optional<Shape>(const std::string&)>& model_shape) {
    const std::vector<fs::path> files = shard_files(tag, mp_rank);
    if (files.empty()) return std::nullopt;
    std::vector<PyValue> shards;
    for (const fs::path& f : files) {
        PyValue root = io::load_torch_file(f);
        const PyValue* osd = root.find("optimizer_state_dict");
        MT_CHECK(osd && osd->find("base_optimizer_state") &&
                     osd->find("single_partition_of_fp32_groups"),
                 f.string(), ": not a ZeRO stage 1 or 2 optimizer shard");
        shards.push_back(*osd);
    }
    const std::string first = files[0].string();
    const bool by_shapes = !param_shapes.is_none();
    MT_CHECK(!by_shapes || param_shapes.kind() == PyKind::list, tag.string(),
             ": param_shapes is not a list of param groups");
    const PyValue& base0 = shards[0]["base_optimizer_state"];
    const size_t groups = base0["param_groups"].items().size();
    MT_CHECK(!by_shapes || param_shapes.items().size() == groups, first, ": ", groups,
             " param groups, param_shapes has ", param_shapes.items().size());

    std::vector<DeepSpeedParamGroup> out;
    for (size_t g = 0; g < groups; ++g) {
        // A group is split over `partitions` ranks; the shards hold `replicas` such splits, one
        // per expert-parallel rank (rank d holding expert-parallel rank d % replicas' experts, as
        // DeepSpeed groups ranks), for a dense group one.
        const int64_t partitions = per_group(shards[0], "partition_count", g, first).as_int();
        const int64_t n = int64_t(shards.size());
        MT_CHECK(partitions >= 1 && n % partitions == 0, first, ": param group ", g,
                 " is split over ", partitions, " ranks, the folder holds ", n, " shards");
        const int64_t replicas = n / partitions;
        MT_CHECK(replicas == 1 || !by_shapes, first, ": param group ", g, " is split over ",
                 partitions, " ranks, the folder holds ", n, " shards");
        DeepSpeedParamGroup group;
        group.settings = base0["param_groups"].items()[g];
        std::map<std::string, int64_t> first_expert;  // per MoE layer, of this replica
        for (int64_t e = 0; e < replicas; ++e) {
            std::vector<size_t> ranks;
            for (int64_t k = 0; k < partitions; ++k) ranks.push_back(size_t(e + k * replicas));
            for (size_t d : ranks)
                MT_CHECK(per_group(shards[d], "partition_count", g, files[d].string()).as_int() ==
                             partitions,
                         files[d].string(), ": param group ", g, " is split over another count",
                         " of ranks than in ", first);
            const JoinedGroup joined = join_group(shards, files, g, ranks);
            const PyValue* own = group_state(shards[ranks[0]]["base_optimizer_state"], g);
            const PyValue* step = own ? own->find("step") : nullptr;
            // Its parameters, one after another.
            std::vector<std::pair<std::string, Shape>> params;
            if (by_shapes) {
                for (const auto& [k, size] : param_shapes.items()[g].dict_ref().items)
                    params.emplace_back(k.as_string(), shape_of(size, first));
            } else {
                std::map<std::string, int64_t> local_experts;
                for (const auto& [name, numel] : mapped_params(shards, files, g, ranks)) {
                    const std::string global =
                        global_expert_name(name, first_expert, local_experts);
                    const std::optional<Shape> shape = model_shape(global);
                    MT_CHECK(shape.has_value(), files[ranks[0]].string(),
                             ": the optimizer's parameter '", global.substr(0, 200),
                             "' is not in the model");
                    MT_CHECK(shape_numel(*shape) == numel, files[ranks[0]].string(), ": '",
                             global.substr(0, 200), "' has ", numel, " elements, in the model ",
                             shape_numel(*shape));
                    params.emplace_back(global, *shape);
                }
                for (const auto& [layer, count] : local_experts) first_expert[layer] += count;
            }
            const int64_t real = joined.fp32.numel();
            int64_t offset = 0;
            for (const auto& param : params) {
                const Shape& shape = param.second;
                const int64_t count = shape_numel(shape);
                MT_CHECK(offset + count <= real, first, ": the parameters of param group ", g,
                         " need more than its ", real, " elements");
                auto piece = [&](const Tensor& flat) {
                    return flat.slice(0, offset, offset + count).contiguous().view(shape);
                };
                group.params.push_back({param.first, piece(joined.fp32), piece(joined.avg),
                                        piece(joined.avg_sq), step ? *step : PyValue()});
                offset += count;
            }
            MT_CHECK(offset == real, first, ": param group ", g, " holds ", real,
                     " elements, its parameters ", offset);
        }
        out.push_back(std::move(group));
    }
    return out;
}

}  // namespace mt::plugins::torch_ckpt
