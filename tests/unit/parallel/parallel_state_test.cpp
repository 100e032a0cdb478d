// ParallelState without MPI: one process, the size checks, and whole worlds of up to 16 ranks
// simulated by threads, whose split() records which global ranks each group holds.
#include <gtest/gtest.h>

#include "expected_groups.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>

#include "mt/error.h"
#include "mt/parallel/parallel_state.h"
#include "test_support.h"

namespace {

using mt::parallel::Group;
using mt::parallel::ParallelConfig;
using mt::parallel::ParallelState;
using mt::parallel::test::Groups;

// What the threads of one simulated world share: the (color, key) every rank passed to each
// split of the world, in call order.
struct SimJob {
    explicit SimJob(int n) : size(n) {}
    const int size;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::vector<std::pair<int, int>>> rounds;
    std::vector<int> arrived;
};

// One rank's view of a group of the simulated world. Only the world splits (ParallelState splits
// nothing else); no data moves.
class SimComm final : public mt::Communicator {
  public:
    SimComm(std::shared_ptr<SimJob> job, std::vector<int> members, int rank, bool is_world)
        : job_(std::move(job)), members_(std::move(members)), rank_(rank), is_world_(is_world) {}

    const std::vector<int>& members() const { return members_; }

    std::string_view name() const override { return "sim"; }
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(members_.size()); }

    std::unique_ptr<Communicator> split(int color, int key) override {
        MT_CHECK(is_world_, "the simulated world only splits the world");
        std::unique_lock lock(job_->mu);
        const size_t round = next_round_++;
        if (job_->rounds.size() <= round) {
            job_->rounds.resize(round + 1, std::vector<std::pair<int, int>>(job_->size));
            job_->arrived.resize(round + 1, 0);
        }
        job_->rounds[round][static_cast<size_t>(rank_)] = {color, key};
        ++job_->arrived[round];
        job_->cv.notify_all();
        const bool all = job_->cv.wait_for(lock, std::chrono::seconds(20),
                                           [&] { return job_->arrived[round] == job_->size; });
        MT_CHECK(all, "split ", round, ": not every simulated rank arrived");
        std::vector<std::tuple<int, int>> same;  // (key, global rank), MPI_Comm_split's order
        for (int r = 0; r < job_->size; ++r) {
            const auto [c, k] = job_->rounds[round][static_cast<size_t>(r)];
            if (c == color) same.emplace_back(k, r);
        }
        std::sort(same.begin(), same.end());
        std::vector<int> members;
        int mine = -1;
        for (const auto& [k, r] : same) {
            if (r == rank_) mine = static_cast<int>(members.size());
            members.push_back(r);
        }
        return std::make_unique<SimComm>(job_, std::move(members), mine, false);
    }

    void all_reduce(mt::Tensor&, mt::ReduceOp) override { unsupported(); }
    void all_gather(const mt::Tensor&, mt::Tensor&) override { unsupported(); }
    void reduce_scatter(const mt::Tensor&, mt::Tensor&, mt::ReduceOp) override { unsupported(); }
    void broadcast(mt::Tensor&, int) override { unsupported(); }
    void all_to_all(const mt::Tensor&, std::span<const int64_t>, mt::Tensor&,
                    std::span<const int64_t>) override {
        unsupported();
    }
    void send(const mt::Tensor&, int) override { unsupported(); }
    void recv(mt::Tensor&, int) override { unsupported(); }
    void barrier() override { unsupported(); }
    std::unique_ptr<mt::CommRequest> isend(const mt::Tensor&, int, int) override { unsupported(); }
    std::unique_ptr<mt::CommRequest> irecv(mt::Tensor&, int, int) override { unsupported(); }
    std::unique_ptr<mt::CommRequest> iall_reduce(mt::Tensor&, mt::ReduceOp) override {
        unsupported();
    }
    std::unique_ptr<mt::CommRequest> ireduce_scatter(const mt::Tensor&, mt::Tensor&,
                                                     mt::ReduceOp) override {
        unsupported();
    }
    std::unique_ptr<mt::CommRequest> iall_gather(const mt::Tensor&, mt::Tensor&) override {
        unsupported();
    }
    void abort(int) override { unsupported(); }
    int64_t bytes_sent() const override { return 0; }

  private:
    [[noreturn]] static void unsupported() { MT_FAIL("not simulated"); }

    std::shared_ptr<SimJob> job_;
    std::vector<int> members_;
    int rank_;
    bool is_world_;
    size_t next_round_ = 0;
};

std::vector<int> iota(int n) {
    std::vector<int> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
    return v;
}

// What one simulated rank saw of each group: the global ranks ParallelState says it holds, and
// the members and rank of the communicator it got (empty and -1 for a null one).
struct Seen {
    std::vector<int> global_ranks, members;
    int rank = -1;
};
struct RankView {
    std::vector<Seen> groups;  // by Group
    bool first = false, last = false;
    int dp_size = 0;
};

// Builds a ParallelState on every rank of a simulated world of `world` ranks.
std::vector<RankView> simulate(int world, const ParallelConfig& config) {
    auto job = std::make_shared<SimJob>(world);
    std::vector<RankView> views(static_cast<size_t>(world));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
            try {
                ParallelState s(std::make_unique<SimComm>(job, iota(world), r, true), config);
                auto& v = views[static_cast<size_t>(r)];
                for (int g = 0; g < mt::parallel::kNumGroups; ++g) {
                    Seen seen;
                    seen.global_ranks = s.global_ranks(static_cast<Group>(g));
                    if (auto* c = s.group(static_cast<Group>(g))) {
                        seen.members = dynamic_cast<SimComm&>(*c).members();
                        seen.rank = c->rank();
                    }
                    v.groups.push_back(seen);
                }
                v.first = s.is_first_stage();
                v.last = s.is_last_stage();
                v.dp_size = s.dp().size();
            } catch (...) {
                errors[static_cast<size_t>(r)] = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    return views;
}

const std::vector<int>* group_of(const Groups& groups, int rank) {
    for (const auto& g : groups)
        if (std::find(g.begin(), g.end(), rank) != g.end()) return &g;
    return nullptr;
}

// Checks every rank's groups against rank_groups over Megatron's orders, stated here again.
void check_world(int world, ParallelConfig config) {
    SCOPED_TRACE(mt::str("world ", world, " tp ", config.tensor_parallel, " pp ",
                         config.pipeline_parallel, " cp ", config.context_parallel, " ep ",
                         config.expert_parallel, " etp ", config.expert_tensor_parallel,
                         config.tp_pp_dp_mapping ? " tp-pp-dp" : ""));
    const auto views = simulate(world, config);
    for (int g = 0; g < mt::parallel::kNumGroups; ++g) {
        const Groups expected =
            mt::parallel::test::expected_groups(world, config, static_cast<Group>(g));
        for (int r = 0; r < world; ++r) {
            SCOPED_TRACE(mt::str("group kind ", g, " rank ", r));
            const Seen& seen = views[static_cast<size_t>(r)].groups[static_cast<size_t>(g)];
            const std::vector<int>* want = group_of(expected, r);
            if (!want) {
                ASSERT_EQ(static_cast<Group>(g), Group::embedding);
                EXPECT_TRUE(seen.global_ranks.empty());
                EXPECT_TRUE(seen.members.empty());
                continue;
            }
            EXPECT_EQ(seen.global_ranks, *want);
            EXPECT_EQ(seen.members, *want);
            EXPECT_EQ(seen.rank, std::find(want->begin(), want->end(), r) - want->begin());
        }
    }
    for (int r = 0; r < world; ++r) {
        const auto& v = views[static_cast<size_t>(r)];
        const auto& pp_ranks = v.groups[static_cast<size_t>(Group::pp)].global_ranks;
        EXPECT_EQ(v.first, pp_ranks.front() == r);
        EXPECT_EQ(v.last, pp_ranks.back() == r);
        EXPECT_EQ(v.dp_size, world / (config.tensor_parallel * config.pipeline_parallel *
                                      config.context_parallel));
    }
}

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

TEST(ParallelState, SingleProcess) {
    auto s = ParallelState::single_process();
    for (int g = 0; g < mt::parallel::kNumGroups; ++g) {
        auto* c = s->group(static_cast<Group>(g));
        ASSERT_NE(c, nullptr) << g;
        EXPECT_EQ(c->size(), 1) << g;
        EXPECT_EQ(c->rank(), 0) << g;
        EXPECT_EQ(s->global_ranks(static_cast<Group>(g)), std::vector<int>{0}) << g;
    }
    EXPECT_EQ(s->world().size(), 1);
    EXPECT_EQ(s->dp().size(), 1);
    EXPECT_TRUE(s->is_first_stage());
    EXPECT_TRUE(s->is_last_stage());
    EXPECT_EQ(s->config().expert_tensor_parallel, 1);
}

TEST(ParallelState, InitializeModelParallelDocstring) {
    // 16 ranks, tp 2, pp 4: e.g. rank 5 is in tp [4, 5], dp [5, 7], pp [1, 5, 9, 13], and in no
    // embedding group (its pipeline's embedding group is [1, 13]).
    const auto views = simulate(16, cfg(2, 4));
    const auto& v5 = views[5].groups;
    EXPECT_EQ(v5[size_t(Group::tp)].members, (std::vector<int>{4, 5}));
    EXPECT_EQ(v5[size_t(Group::dp)].members, (std::vector<int>{5, 7}));
    EXPECT_EQ(v5[size_t(Group::pp)].members, (std::vector<int>{1, 5, 9, 13}));
    EXPECT_TRUE(v5[size_t(Group::embedding)].members.empty());
    EXPECT_EQ(views[13].groups[size_t(Group::embedding)].members, (std::vector<int>{1, 13}));
    EXPECT_EQ(views[13].groups[size_t(Group::embedding)].rank, 1);
    check_world(16, cfg(2, 4));
}

TEST(ParallelState, Layouts) {
    check_world(2, cfg(2, 1));
    check_world(2, cfg(1, 2));
    check_world(2, cfg(1, 1, 2));
    check_world(4, cfg(2, 1));                  // tp 2 x dp 2
    check_world(4, cfg(2, 2));                  // pp 2 x tp 2
    check_world(8, cfg(2, 2, 2));               // tp, cp, pp
    check_world(16, cfg(2, 2, 2));              // and dp 2
    check_world(8, cfg(2, 2, 1, 1, 0, true));   // tp-pp-dp mapping
    check_world(16, cfg(1, 2, 2, 2, 0, true));  // with cp (and etp x ep = tp x cp)
    check_world(8, cfg(2, 1, 1, 2));            // ep 2 with etp = tp 2
    check_world(8, cfg(2, 1, 1, 4, 1));         // ep 4, etp 1
    check_world(8, cfg(1, 2, 2, 2));            // cp and ep: expert dp differs from dp
    check_world(16, cfg(2, 2, 1, 2, 1, true));  // tp-pp-dp with etp x ep = tp x cp
    check_world(12, cfg(3, 2));
}

TEST(ParallelState, RejectsBadSizes) {
    const auto error_for = [](int world, const ParallelConfig& c) {
        return mt::test::error_of([&] {
            auto job = std::make_shared<SimJob>(world);
            ParallelState s(std::make_unique<SimComm>(job, iota(world), 0, true), c);
        });
    };
    std::string e = error_for(6, cfg(4, 1));
    EXPECT_NE(e.find("world size (6 ranks) is not a multiple of --tensor-model-parallel-size (4)"),
              std::string::npos)
        << e;
    e = error_for(8, cfg(2, 3));
    EXPECT_NE(e.find("--pipeline-model-parallel-size (3)"), std::string::npos) << e;
    e = error_for(4, cfg(1, 1, 1, 8));
    EXPECT_NE(e.find("--expert-model-parallel-size (8)"), std::string::npos) << e;
    e = error_for(4, cfg(1, 1, 1, 1, 8));
    EXPECT_NE(e.find("--expert-tensor-parallel-size (8)"), std::string::npos) << e;
    e = error_for(4, cfg(0, 1));
    EXPECT_NE(e.find("--tensor-model-parallel-size must be at least 1, got 0"), std::string::npos)
        << e;
    e = error_for(4, cfg(1, 1, -1));
    EXPECT_NE(e.find("--context-parallel-size must be at least 1"), std::string::npos) << e;
    // pp not last: the expert layers must have the dense layers' data parallel size.
    e = error_for(8, cfg(2, 2, 1, 2, 0, true));
    EXPECT_NE(e.find("--use-tp-pp-dp-mapping"), std::string::npos) << e;
    // The world alone is too small for tp 2.
    e = mt::test::error_of([] { ParallelState s(mt::make_local_communicator(), cfg(2, 1)); });
    EXPECT_NE(e.find("--tensor-model-parallel-size (2)"), std::string::npos) << e;
}

}  // namespace
