// The tests' oracle for ParallelState: every group of a kind as Megatron lays it out, stated from
// rank_groups over Megatron's orders (tp-cp-ep-dp-pp, tp-cp-ep-pp-dp with the tp-pp-dp mapping;
// the expert generator over (etp, 1, ep, edp, pp)), independently of ParallelState's own code.
#pragma once

#include <string>
#include <vector>

#include "mt/parallel/parallel_state.h"

namespace mt::parallel::test {

using Groups = std::vector<std::vector<int>>;

inline Groups expected_groups(int world, const ParallelConfig& c, Group g) {
    const int tp = c.tensor_parallel, pp = c.pipeline_parallel, cp = c.context_parallel,
              ep = c.expert_parallel,
              etp = c.expert_tensor_parallel ? c.expert_tensor_parallel : tp;
    const int dp = world / (tp * pp * cp), edp = world / (etp * ep * pp);
    const bool m = c.tp_pp_dp_mapping;
    const std::vector<std::string> order =
        m ? std::vector<std::string>{"tp", "cp", "ep", "pp", "dp"}
          : std::vector<std::string>{"tp", "cp", "ep", "dp", "pp"};
    const std::vector<int> dense =
        m ? std::vector<int>{tp, cp, 1, pp, dp} : std::vector<int>{tp, cp, 1, dp, pp};
    const std::vector<int> expert =
        m ? std::vector<int>{etp, 1, ep, pp, edp} : std::vector<int>{etp, 1, ep, edp, pp};
    switch (g) {
        case Group::tp:
            return rank_groups(order, dense, "tp");
        case Group::cp:
            return rank_groups(order, dense, "cp");
        case Group::dp:
            return rank_groups(order, dense, "dp");
        case Group::dp_cp:
            return rank_groups(order, dense, "dp-cp");
        case Group::pp:
            return rank_groups(order, dense, "pp");
        case Group::model_parallel:
            return rank_groups(order, dense, "tp-pp");
        case Group::tp_cp:
            return rank_groups(order, dense, "tp-cp");
        case Group::embedding: {
            // The first and last stage of every pipeline (the rank alone with one stage).
            Groups e;
            for (const auto& p : rank_groups(order, dense, "pp"))
                e.push_back(p.size() == 1 ? std::vector<int>{p[0]}
                                          : std::vector<int>{p.front(), p.back()});
            return e;
        }
        case Group::expert_tp:
            return rank_groups(order, expert, "tp");
        case Group::ep:
            return rank_groups(order, expert, "ep");
        case Group::expert_dp:
            return rank_groups(order, expert, "dp");
        case Group::expert_tp_ep:
            return rank_groups(order, expert, "tp-ep");
    }
    return {};
}

}  // namespace mt::parallel::test
