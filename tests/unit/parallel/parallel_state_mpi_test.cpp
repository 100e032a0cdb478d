// ParallelState over the real MPI world (run under mpirun at 2 and 4 ranks): for several layouts,
// every group has the size and rank rank_groups gives, and collectives over it reach exactly
// the expected global ranks.
#include <gtest/gtest.h>

#include "expected_groups.h"

#include <algorithm>
#include <numeric>

#include "mt/error.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"

namespace {

using mt::parallel::Group;
using mt::parallel::ParallelConfig;
using mt::parallel::ParallelState;
using mt::parallel::test::Groups;

mt::Communicator& world() {
    static std::unique_ptr<mt::Communicator> w =
        mt::parallel::make_world_communicator(mt::Registry::global(), "cpu");
    return *w;
}

// This rank's group of kind `g` as Megatron lays it out (empty: in no embedding group).
std::vector<int> expected_group(int world_size, int rank, const ParallelConfig& c, Group g) {
    for (const auto& grp : mt::parallel::test::expected_groups(world_size, c, g))
        if (std::find(grp.begin(), grp.end(), rank) != grp.end()) return grp;
    return {};
}

struct Layout {
    const char* name;
    int world_size;
    ParallelConfig config;
};

ParallelConfig cfg(int tp, int pp, int cp = 1, int ep = 1, int etp = 0, bool tp_pp_dp = false) {
    ParallelConfig c;
    c.tensor_parallel = tp;
    c.pipeline_parallel = pp;
    c.context_parallel = cp;
    c.expert_parallel = ep;
    c.expert_tensor_parallel = etp;
    c.tp_pp_dp_mapping = tp_pp_dp;
    return c;
}

const Layout kLayouts[] = {
    {"tp2", 2, cfg(2, 1)},
    {"dp2", 2, cfg(1, 1)},
    {"pp2", 2, cfg(1, 2)},
    {"cp2", 2, cfg(1, 1, 2)},
    {"ep2", 2, cfg(1, 1, 1, 2)},
    {"pp2 tp-pp-dp", 2, cfg(1, 2, 1, 1, 0, true)},
    {"dp4", 4, cfg(1, 1)},
    {"tp2 dp2", 4, cfg(2, 1)},
    {"pp2 tp2", 4, cfg(2, 2)},
    {"pp2 dp2", 4, cfg(1, 2)},
    {"cp2 tp2", 4, cfg(2, 1, 2)},
    {"cp2 dp2", 4, cfg(1, 1, 2)},
    {"pp2 dp2 tp-pp-dp", 4, cfg(1, 2, 1, 1, 0, true)},
    {"pp2 cp2 ep2 tp-pp-dp", 4, cfg(1, 2, 2, 2, 0, true)},
    {"tp2 ep2", 4, cfg(2, 1, 1, 2)},
    {"ep2 dp2", 4, cfg(1, 1, 1, 2)},
    {"ep4 etp1 tp2", 4, cfg(2, 1, 1, 4, 1)},
    {"pp2 ep2", 4, cfg(1, 2, 1, 2)},
    {"cp2 ep2", 4, cfg(1, 1, 2, 2)},
};

// Checks every group of `s` on this rank. Only EXPECTs: every rank must reach every collective.
void check_groups(const ParallelState& s, const ParallelConfig& config) {
    const int world_size = s.world().size(), rank = s.world().rank();
    for (int k = 0; k < mt::parallel::kNumGroups; ++k) {
        const auto g = static_cast<Group>(k);
        SCOPED_TRACE(mt::str("group kind ", k, " on rank ", rank));
        const std::vector<int> want = expected_group(world_size, rank, config, g);
        EXPECT_EQ(s.global_ranks(g), want);
        mt::Communicator* c = s.group(g);
        if (want.empty()) {
            EXPECT_EQ(c, nullptr);
            continue;
        }
        if (c == nullptr) {
            ADD_FAILURE() << "no communicator";
            continue;
        }
        EXPECT_EQ(c->size(), static_cast<int>(want.size()));
        EXPECT_EQ(c->rank(), std::find(want.begin(), want.end(), rank) - want.begin());
        if (c->size() != static_cast<int>(want.size())) continue;  // same on every member

        auto sum = mt::Tensor::empty({1}, mt::DType::i64);
        sum.data<int64_t>()[0] = rank;
        c->all_reduce(sum, mt::ReduceOp::sum);
        EXPECT_EQ(sum.data<int64_t>()[0], std::accumulate(want.begin(), want.end(), int64_t{0}));

        // And in order: gathering the global ranks gives the group as listed.
        auto mine = mt::Tensor::empty({1}, mt::DType::i64);
        mine.data<int64_t>()[0] = rank;
        auto all = mt::Tensor::zeros({static_cast<int64_t>(want.size())}, mt::DType::i64);
        c->all_gather(mine, all);
        std::vector<int> gathered;
        for (size_t i = 0; i < want.size(); ++i)
            gathered.push_back(static_cast<int>(all.data<int64_t>()[i]));
        EXPECT_EQ(gathered, want);
    }
}

TEST(ParallelStateMpi, EveryLayoutOfThisWorld) {
    const int n = world().size();
    int checked = 0;
    for (const auto& layout : kLayouts) {
        if (layout.world_size != n) continue;
        SCOPED_TRACE(layout.name);
        // A fresh copy of the world per layout: ParallelState owns the world it is given.
        ParallelState s(world().split(0, world().rank()), layout.config);
        EXPECT_EQ(s.world().size(), n);
        check_groups(s, layout.config);
        world().barrier();
        ++checked;
    }
    if (checked == 0) GTEST_SKIP() << "no layout for " << n << " ranks";
}

TEST(ParallelStateMpi, BadSizesFailOnEveryRank) {
    const int n = world().size();
    ParallelConfig c = cfg(n + 1, 1);
    EXPECT_THROW(ParallelState(world().split(0, world().rank()), c), mt::Error);
    world().barrier();
}

}  // namespace
