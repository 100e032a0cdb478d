// rank_groups: the global ranks of every group of one kind, laid out as Megatron-core's
// RankGenerator.get_ranks (generate_masked_orthogonal_rank_groups) lays them out.
#include <algorithm>
#include <cstddef>

#include "mt/error.h"
#include "mt/parallel/parallel_state.h"

namespace mt::parallel {

namespace {

std::vector<std::string> split_dashes(const std::string& s) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t dash = s.find('-', start);
        parts.push_back(s.substr(start, dash - start));
        if (dash == std::string::npos) break;
        start = dash + 1;
    }
    return parts;
}

std::string join_dashes(const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : "-") + p;
    return s;
}

// The part of a global rank that comes from the dimensions of `shape`/`stride`, at the
// coordinates that are the mixed-radix digits of `index` (first dimension fastest).
int64_t place(int64_t index, const std::vector<int>& shape, const std::vector<int64_t>& stride) {
    int64_t rank = 0;
    for (size_t k = 0; k < shape.size(); ++k) {
        rank += (index % shape[k]) * stride[k];
        index /= shape[k];
    }
    return rank;
}

}  // namespace

std::vector<std::vector<int>> rank_groups(const std::vector<std::string>& order,
                                          const std::vector<int>& sizes, const std::string& token) {
    MT_CHECK(!order.empty() && order.size() == sizes.size(), "rank_groups: order '",
             join_dashes(order), "' has ", order.size(), " dimensions but ", sizes.size(),
             " sizes were given");
    for (size_t i = 0; i < order.size(); ++i) {
        MT_CHECK(sizes[i] >= 1, "rank_groups: dimension '", order[i], "' has size ", sizes[i]);
        MT_CHECK(std::count(order.begin(), order.end(), order[i]) == 1, "rank_groups: order '",
                 join_dashes(order), "' names '", order[i], "' twice");
    }

    // Which dimensions vary within a group: the token lists them in any order (as Megatron's
    // mask), so "tp-dp" and "dp-tp" are the same groups.
    std::vector<bool> in_group(order.size(), false);
    for (const auto& name : split_dashes(token)) {
        const auto it = std::find(order.begin(), order.end(), name);
        MT_CHECK(it != order.end(), "rank_groups: '", name, "' of '", token,
                 "' is not a dimension of order '", join_dashes(order), "'");
        const size_t d = static_cast<size_t>(it - order.begin());
        MT_CHECK(!in_group[d], "rank_groups: '", token, "' names '", name, "' twice");
        in_group[d] = true;
    }

    // Global rank = sum of coordinate × prefix product of the sizes before it (the first
    // dimension varies fastest). A group fixes the coordinates outside the token (numbered by
    // the group index, first such dimension fastest) and runs over those inside it (numbered
    // by the index within the group, first such dimension fastest).
    std::vector<int> inner_shape, outer_shape;
    std::vector<int64_t> inner_stride, outer_stride;
    int64_t stride = 1;
    for (size_t d = 0; d < order.size(); ++d) {
        (in_group[d] ? inner_shape : outer_shape).push_back(sizes[d]);
        (in_group[d] ? inner_stride : outer_stride).push_back(stride);
        stride *= sizes[d];
    }
    const int64_t world = stride;
    MT_CHECK(world <= (int64_t{1} << 30), "rank_groups: ", world, " ranks is too many");
    int64_t group_size = 1;
    for (int s : inner_shape) group_size *= s;
    const int64_t num_groups = world / group_size;

    std::vector<std::vector<int>> groups(static_cast<size_t>(num_groups));
    for (int64_t g = 0; g < num_groups; ++g) {
        const int64_t base = place(g, outer_shape, outer_stride);
        auto& group = groups[static_cast<size_t>(g)];
        group.reserve(static_cast<size_t>(group_size));
        for (int64_t r = 0; r < group_size; ++r)
            group.push_back(static_cast<int>(base + place(r, inner_shape, inner_stride)));
    }
    return groups;
}

}  // namespace mt::parallel
