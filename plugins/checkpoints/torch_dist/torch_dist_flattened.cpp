#include "torch_dist_flattened.h"

#include <map>

#include "mt/error.h"
#include "torch_dist_optimizer.h"

namespace mt::plugins::torch_dist {

std::vector<StoredTensor> flattened_optimizer_shards(const std::vector<OptimizerShard>& shards,
                                                     const KeyLayout& layout,
                                                     const std::string& chain) {
    if (shards.empty()) return {};
    MT_CHECK(layout.num_layers.has_value(), "torch_dist: the distributed optimizer's shards need ",
             "the args' num_layers");
    std::vector<StoredTensor> out;
    std::map<std::string, size_t> index;
    const std::pair<const char*, Tensor OptimizerShard::*> states[] = {
        {"fp32_param", &OptimizerShard::main_param},
        {"exp_avg", &OptimizerShard::exp_avg},
        {"exp_avg_sq", &OptimizerShard::exp_avg_sq}};
    for (const auto& [state_name, member] : states)
        for (const OptimizerShard& s : shards) {
            // a plain variable: clang 14 (the fuzz build) cannot capture a structured binding
            const std::string state = state_name;
            const Tensor& data = s.*member;
            MT_CHECK(data.defined() && data.dim() == 1 && data.numel() == s.end - s.begin,
                     "torch_dist: ", state, " of ", s.name, " holds ", data.describe(),
                     " for elements [", s.begin, ", ", s.end, ")");
            const KeyPlace place =
                key_place(s.name, layout, *layout.num_layers, layout.num_experts.value_or(0));
            // The rows of `box` (in the tensor `key`, of shape `whole`) starting at element
            // `box_start` of the flattened piece: the part of [begin, end) they hold.
            auto add_box = [&](const std::string& key, const Shape& whole, const ShardBox& box,
                               int64_t box_start) {
                const int64_t n = shape_numel(box.size);
                const int64_t a = std::max(s.begin, box_start), b = std::min(s.end, box_start + n);
                if (a >= b) return;
                Shape original = place.lead_size;
                original.insert(original.end(), whole.begin(), whole.end());
                Shape shape = place.lead_size, offset = place.lead_offset;
                for (size_t d = 0; d < box.size.size(); ++d) {
                    MT_CHECK(box.size[d] > 0 && whole[d] % box.size[d] == 0 &&
                                 box.offset[d] % box.size[d] == 0,
                             "torch_dist: a piece ", shape_str(box.size), " at ",
                             shape_str(box.offset), " of ", key, " is not on the grid of ",
                             shape_str(whole));
                    shape.push_back(whole[d] / box.size[d]);
                    offset.push_back(box.offset[d] / box.size[d]);
                }
                Shape sizes(shape.size(), 1);
                shape.push_back(n);
                offset.push_back(a - box_start);
                sizes.push_back(b - a);
                const std::string stored_key = chain + kMomentPrefix + state + "." + key;
                auto [it, fresh] = index.try_emplace(stored_key, out.size());
                if (fresh) out.push_back({stored_key, shape, {}, original});
                StoredTensor& st = out[it->second];
                MT_CHECK(st.global_shape == shape, "torch_dist: ", stored_key, " has pieces of ",
                         shape_str(st.global_shape), " and ", shape_str(shape));
                st.chunks.emplace_back(offset, data.slice(0, a - s.begin, b - s.begin).view(sizes));
            };
            // Megatron-core narrows a Mamba mixer tensor's piece into its parts before
            // flattening: each part's rows are a box of the part's own key.
            const std::vector<TensorPart> parts = stored_parts(s.name, layout);
            int64_t box_start = 0;  // where the box begins in the flattened piece
            for (const ShardBox& box : s.boxes) {
                const int64_t n = shape_numel(box.size);
                if (parts.empty()) {
                    add_box(place.key, s.global_shape, box, box_start);
                } else {
                    const int64_t row = box.size[0] > 0 ? n / box.size[0] : 0;
                    for (const PartPiece& p : part_pieces(parts, box.offset[0], box.size[0])) {
                        ShardBox sub = box;
                        sub.offset[0] = p.offset;
                        sub.size[0] = p.to - p.from;
                        Shape whole = s.global_shape;
                        whole[0] = p.part->size;
                        add_box(place.key + "." + p.part->suffix, whole, sub,
                                box_start + p.from * row);
                    }
                }
                box_start += n;
            }
            MT_CHECK(s.end <= box_start, "torch_dist: ", s.name, "'s range [", s.begin, ", ", s.end,
                     ") passes the end of its piece (", box_start, " elements)");
        }
    return out;
}

Tensor unflatten(const Tensor& reformulated, const Shape& original, const std::string& key) {
    const size_t dims = original.size();
    const Shape& r = reformulated.shape();
    MT_CHECK(r.size() == dims + 1, key, ": stored as ", shape_str(r),
             ", not the flattened form of ", shape_str(original));
    Shape piece(dims), count(dims);
    for (size_t d = 0; d < dims; ++d) {
        MT_CHECK(r[d] > 0 && original[d] % r[d] == 0, key, ": ", shape_str(original),
                 " does not split into ", shape_str(r), "'s grid");
        count[d] = r[d];
        piece[d] = original[d] / r[d];
    }
    MT_CHECK(shape_numel(piece) == r[dims], key, ": pieces of ", shape_str(piece), " are not ",
             r[dims], " elements");
    const Tensor rows = reformulated.contiguous().view({shape_numel(count), r[dims]});
    Tensor out = Tensor::empty(original, reformulated.dtype());
    Shape at(dims, 0);  // the piece's index in the grid, row-major like the rows
    for (int64_t row = 0; row < rows.size(0); ++row) {
        Tensor dst = out;
        for (size_t d = 0; d < dims; ++d)
            dst = dst.slice(int64_t(d), at[d] * piece[d], (at[d] + 1) * piece[d]);
        dst.copy_from(rows.select(0, row).view(piece));
        for (size_t d = dims; d-- > 0;) {
            if (++at[d] < count[d]) break;
            at[d] = 0;
        }
    }
    return out;
}

}  // namespace mt::plugins::torch_dist
