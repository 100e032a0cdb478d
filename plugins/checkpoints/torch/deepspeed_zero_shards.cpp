#include "deepspeed_zero_shards.h"

#include <algorithm>
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

}  // namespace

std::optional<std::vector<DeepSpeedParamGroup>> zero_param_groups(const fs::path& tag, int mp_rank,
                                                                  const PyValue& param_shapes) {
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
    MT_CHECK(param_shapes.kind() == PyKind::list, tag.string(),
             ": param_shapes is not a list of param groups");
    const size_t groups = param_shapes.items().size();
    const PyValue& base0 = shards[0]["base_optimizer_state"];
    MT_CHECK(base0["param_groups"].items().size() == groups, first, ": ",
             base0["param_groups"].items().size(), " param groups, param_shapes has ", groups);

    std::vector<DeepSpeedParamGroup> out;
    for (size_t g = 0; g < groups; ++g) {
        // The group's flat buffers, joined.
        std::vector<Tensor> avg, avg_sq, fp32;
        int64_t real = 0;
        for (size_t d = 0; d < shards.size(); ++d) {
            const PyValue& s = shards[d];
            const std::string file = files[d].string();
            const int64_t partitions = per_group(s, "partition_count", g, file).as_int();
            MT_CHECK(partitions == int64_t(shards.size()), file, ": param group ", g,
                     " is split over ", partitions, " ranks, the folder holds ", shards.size(),
                     " shards");
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
        const Tensor joined_avg = join(avg), joined_avg_sq = join(avg_sq), joined_fp32 = join(fp32);
        // Its parameters, one after another.
        DeepSpeedParamGroup group;
        group.settings = base0["param_groups"].items()[g];
        const PyValue* own = group_state(base0, g);
        const PyValue* step = own ? own->find("step") : nullptr;
        int64_t offset = 0;
        for (const auto& [k, size] : param_shapes.items()[g].dict_ref().items) {
            const Shape shape = shape_of(size, first);
            const int64_t n = shape_numel(shape);
            MT_CHECK(offset + n <= real, first, ": the parameters of param group ", g,
                     " need more than its ", real, " elements");
            auto piece = [&](const Tensor& flat) {
                return flat.slice(0, offset, offset + n).contiguous().view(shape);
            };
            group.params.push_back({k.as_string(), piece(joined_fp32), piece(joined_avg),
                                    piece(joined_avg_sq), step ? *step : PyValue()});
            offset += n;
        }
        MT_CHECK(offset == real, first, ": param group ", g, " holds ", real,
                 " elements, its parameters ", offset);
        out.push_back(std::move(group));
    }
    return out;
}

}  // namespace mt::plugins::torch_ckpt
