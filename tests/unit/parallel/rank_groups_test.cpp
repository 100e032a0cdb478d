// rank_groups against the layouts Megatron-core documents (docstrings of
// generate_masked_orthogonal_rank_groups and initialize_model_parallel) and against the
// loop-built layout Megatron had before RankGenerator, which its own tests keep as the golden one.
#include <gtest/gtest.h>

#include <algorithm>

#include "mt/error.h"
#include "mt/parallel/parallel_state.h"
#include "test_support.h"

namespace {

using mt::parallel::rank_groups;
using Groups = std::vector<std::vector<int>>;

const std::vector<std::string> kDefaultOrder = {"tp", "cp", "ep", "dp", "pp"};
const std::vector<std::string> kTpPpDpOrder = {"tp", "cp", "ep", "pp", "dp"};

TEST(RankGroups, MaskedOrthogonalDocstring) {
    // parallel_size [tp, dp, pp] = [2, 3, 4], mask on dp: dp_group[0] = [0, 2, 4],
    // dp_group[1] = [1, 3, 5], ..., dp_group[7] = [19, 21, 23].
    const Groups dp = rank_groups({"tp", "dp", "pp"}, {2, 3, 4}, "dp");
    ASSERT_EQ(dp.size(), 8u);
    EXPECT_EQ(dp[0], (std::vector<int>{0, 2, 4}));
    EXPECT_EQ(dp[1], (std::vector<int>{1, 3, 5}));
    EXPECT_EQ(dp[2], (std::vector<int>{6, 8, 10}));
    EXPECT_EQ(dp[7], (std::vector<int>{19, 21, 23}));
    // 8 GPUs, order tp-pp-dp, sizes 2-2-2: dp_group = [[0, 4], [1, 5], [2, 6], [3, 7]].
    EXPECT_EQ(rank_groups({"tp", "pp", "dp"}, {2, 2, 2}, "dp"),
              (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(RankGroups, InitializeModelParallelDocstring) {
    // 16 GPUs, tp 2, pp 4 (so dp 2).
    const std::vector<int> sizes = {2, 1, 1, 2, 4};
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp"),
              (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp"),
              (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "pp"),
              (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
    // Model parallel: the tp pairs of one pipeline, stage by stage.
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-pp"),
              (Groups{{0, 1, 4, 5, 8, 9, 12, 13}, {2, 3, 6, 7, 10, 11, 14, 15}}));
}

TEST(RankGroups, ContextParallelDocstring) {
    // 8 GPUs, tp 4, cp 2: cp groups [0, 4], [1, 5], [2, 6], [3, 7].
    const std::vector<int> sizes = {4, 2, 1, 1, 1};
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "cp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-cp"), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

TEST(RankGroups, HandComputedTpCpDpPp) {
    // 16 ranks, tp 2, cp 2, dp 2, pp 2: global = tp + 2 cp + 4 dp + 8 pp.
    const std::vector<int> sizes = {2, 2, 1, 2, 2};
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp-cp"),
              (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
    // The token's own order does not matter, the layout's does.
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "cp-dp"),
              rank_groups(kDefaultOrder, sizes, "dp-cp"));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp"),
              (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-pp"),
              (Groups{{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-cp"),
              (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
}

TEST(RankGroups, TpPpDpMapping) {
    // 8 ranks, tp 2, pp 2, dp 2 with pp before dp: global = tp + 2 pp + 4 dp.
    const std::vector<int> sizes = {2, 1, 1, 2, 2};
    EXPECT_EQ(rank_groups(kTpPpDpOrder, sizes, "tp"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    EXPECT_EQ(rank_groups(kTpPpDpOrder, sizes, "pp"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
    EXPECT_EQ(rank_groups(kTpPpDpOrder, sizes, "dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(rank_groups(kTpPpDpOrder, sizes, "tp-pp"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
    // With cp: 8 ranks, tp 1, cp 2, pp 2, dp 2: global = cp + 2 pp + 4 dp.
    const std::vector<int> with_cp = {1, 2, 1, 2, 2};
    EXPECT_EQ(rank_groups(kTpPpDpOrder, with_cp, "cp"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    EXPECT_EQ(rank_groups(kTpPpDpOrder, with_cp, "dp-cp"), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
    EXPECT_EQ(rank_groups(kTpPpDpOrder, with_cp, "pp"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(RankGroups, ExpertGenerator) {
    // 8 ranks, etp 2, ep 2 (expert dp 2), pp 1: global = etp + 2 ep + 4 edp.
    const std::vector<int> sizes = {2, 1, 2, 2, 1};
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "ep"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-ep"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
    // etp 1, ep 4, expert dp 2: the experts spread over consecutive ranks.
    const std::vector<int> etp1 = {1, 1, 4, 2, 1};
    EXPECT_EQ(rank_groups(kDefaultOrder, etp1, "ep"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, etp1, "dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, etp1, "tp").size(), 8u);
}

TEST(RankGroups, SizeOneWorld) {
    EXPECT_EQ(rank_groups(kDefaultOrder, {1, 1, 1, 1, 1}, "tp-cp-ep-dp-pp"), (Groups{{0}}));
    EXPECT_EQ(rank_groups(kDefaultOrder, {1, 1, 1, 1, 1}, "dp"), (Groups{{0}}));
}

TEST(RankGroups, RejectsBadArguments) {
    EXPECT_NE(mt::test::error_of([] {
                  rank_groups({"tp", "dp"}, {2, 2}, "pp");
              }).find("'pp' of 'pp' is not a dimension of order 'tp-dp'"),
              std::string::npos);
    EXPECT_THROW(rank_groups({"tp", "dp"}, {2}, "tp"), mt::Error);
    EXPECT_THROW(rank_groups({"tp", "tp"}, {2, 2}, "tp"), mt::Error);
    EXPECT_THROW(rank_groups({"tp", "dp"}, {2, 0}, "tp"), mt::Error);
    EXPECT_THROW(rank_groups({"tp", "dp"}, {2, 2}, "tp-tp"), mt::Error);
    EXPECT_THROW(rank_groups({"tp", "dp"}, {2, 2}, ""), mt::Error);
}

// The layout as Megatron built it with loops before RankGenerator (its tests compare the two):
// pp outermost in blocks of world/pp ranks, then dp, then cp, then tp fastest.
struct Legacy {
    Groups dp, dp_cp, cp, mp, tp, pp, expert_tp_ep, expert_dp;
};

Legacy legacy_layout(int world, int tp, int pp, int cp, int ep) {
    Legacy l;
    const int dp = world / (tp * pp * cp), stage = world / pp;
    for (int s = 0; s < pp; ++s) {
        const int begin = s * stage, end = begin + stage;
        for (int j = 0; j < tp * cp; ++j) {
            l.dp.emplace_back();
            for (int r = begin + j; r < end; r += tp * cp) l.dp.back().push_back(r);
        }
        for (int j = 0; j < tp; ++j) {
            l.dp_cp.emplace_back();
            for (int r = begin + j; r < end; r += tp) l.dp_cp.back().push_back(r);
        }
        for (int d = 0; d < dp; ++d)
            for (int k = 0; k < tp; ++k) {
                l.cp.emplace_back();
                const int block = begin + d * tp * cp;
                for (int r = block + k; r < block + tp * cp; r += tp) l.cp.back().push_back(r);
            }
    }
    // Model parallel group i: the i-th member of every dp-cp group, in their order.
    for (int i = 0; i < dp * cp; ++i) {
        l.mp.emplace_back();
        for (const auto& g : l.dp_cp) l.mp.back().push_back(g[i]);
    }
    for (int b = 0; b < world; b += tp) {
        l.tp.emplace_back();
        for (int r = b; r < b + tp; ++r) l.tp.back().push_back(r);
    }
    for (int i = 0; i < stage; ++i) {
        l.pp.emplace_back();
        for (int r = i; r < world; r += stage) l.pp.back().push_back(r);
    }
    // Experts: ranks as an array (pp, edp, ep, tp); tp-ep rows, and dp columns per (pp, ep, tp).
    const int edp = world / (tp * ep * pp);
    for (int b = 0; b < world; b += ep * tp) {
        l.expert_tp_ep.emplace_back();
        for (int r = b; r < b + ep * tp; ++r) l.expert_tp_ep.back().push_back(r);
    }
    for (int s = 0; s < pp; ++s)
        for (int e = 0; e < ep; ++e)
            for (int t = 0; t < tp; ++t) {
                l.expert_dp.emplace_back();
                for (int d = 0; d < edp; ++d)
                    l.expert_dp.back().push_back(((s * edp + d) * ep + e) * tp + t);
            }
    return l;
}

TEST(RankGroups, MatchesMegatronLegacyLayout) {
    struct Case {
        int world, tp, pp, cp, ep;
    };
    // A subset of the (nodes x gpus, tp, pp, cp, ep) cases of Megatron's
    // test_rank_generator_for_tp_dp_pp, plus small ones.
    const Case cases[] = {{1, 1, 1, 1, 1},   {8, 8, 1, 1, 1},   {8, 2, 2, 1, 1},
                          {8, 2, 4, 1, 1},   {24, 8, 3, 1, 1},  {32, 2, 4, 1, 1},
                          {64, 2, 1, 1, 4},  {64, 2, 2, 2, 4},  {64, 2, 1, 4, 8},
                          {64, 2, 2, 2, 8},  {128, 4, 8, 1, 4}, {128, 4, 8, 4, 1},
                          {256, 8, 8, 4, 1}, {512, 4, 2, 8, 8}, {2528, 4, 8, 1, 1},
                          {4, 2, 1, 2, 1},   {12, 3, 2, 1, 1},  {16, 2, 2, 2, 2}};
    for (const auto& c : cases) {
        SCOPED_TRACE(
            mt::str("world ", c.world, " tp ", c.tp, " pp ", c.pp, " cp ", c.cp, " ep ", c.ep));
        const int dp = c.world / (c.tp * c.pp * c.cp), edp = c.world / (c.tp * c.ep * c.pp);
        const Legacy l = legacy_layout(c.world, c.tp, c.pp, c.cp, c.ep);
        const std::vector<int> sizes = {c.tp, c.cp, 1, dp, c.pp};
        const std::vector<int> expert = {c.tp, 1, c.ep, edp, c.pp};
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp"), l.dp);
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "dp-cp"), l.dp_cp);
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "cp"), l.cp);
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp-pp"), l.mp);
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "tp"), l.tp);
        EXPECT_EQ(rank_groups(kDefaultOrder, sizes, "pp"), l.pp);
        EXPECT_EQ(rank_groups(kDefaultOrder, expert, "tp-ep"), l.expert_tp_ep);
        EXPECT_EQ(rank_groups(kDefaultOrder, expert, "dp"), l.expert_dp);
    }
}

TEST(RankGroups, EveryKindPartitionsTheWorld) {
    const std::vector<int> sizes = {2, 3, 1, 2, 2};
    for (const auto& order : {kDefaultOrder, kTpPpDpOrder})
        for (const char* token :
             {"tp", "cp", "dp", "pp", "dp-cp", "tp-pp", "tp-cp", "tp-cp-dp-pp"}) {
            const Groups groups = rank_groups(order, sizes, token);
            std::vector<int> all;
            for (const auto& g : groups) {
                EXPECT_EQ(g.size(), groups.front().size()) << token;
                all.insert(all.end(), g.begin(), g.end());
            }
            std::sort(all.begin(), all.end());
            ASSERT_EQ(all.size(), 24u) << token;
            for (int r = 0; r < 24; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], r) << token;
        }
}

}  // namespace
