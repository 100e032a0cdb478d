// ParallelState: computes every group of this rank as Megatron-core's initialize_model_parallel
// does, and splits the world communicator into them.
#include "mt/parallel/parallel_state.h"

#include "mt/error.h"

namespace mt::parallel {

namespace {

using Groups = std::vector<std::vector<int>>;

void check_size(int value, const char* flag) {
    MT_CHECK(value >= 1, flag, " must be at least 1, got ", value);
}

// Splits `world` so that each group of `groups` becomes one communicator, ordered as the group
// lists its ranks. Collective over `world`: every rank calls it with the same groups. A rank in
// none of the groups (only the embedding groups leave ranks out) still takes part, under a colour
// of its own, and gets null; `members` receives the global ranks of this rank's group.
std::unique_ptr<Communicator> split_into(Communicator& world, const Groups& groups,
                                         const char* kind, std::vector<int>& members) {
    const int rank = world.rank();
    int color = -1, key = 0;
    for (size_t g = 0; g < groups.size() && color < 0; ++g)
        for (size_t i = 0; i < groups[g].size(); ++i)
            if (groups[g][i] == rank) {
                color = static_cast<int>(g);
                key = static_cast<int>(i);
                break;
            }
    const bool member = color >= 0;
    if (!member) {
        color = static_cast<int>(groups.size());
        key = rank;
    }
    auto comm = world.split(color, key);
    MT_CHECK(comm != nullptr, "the ", world.name(), " communicator returned no ", kind,
             " group on rank ", rank);
    if (!member) {
        members.clear();
        return nullptr;
    }
    members = groups[static_cast<size_t>(color)];
    MT_CHECK(comm->size() == static_cast<int>(members.size()) && comm->rank() == key, "the ", kind,
             " group of rank ", rank, " should have ", members.size(), " ranks with this one at ",
             key, ", but the ", world.name(), " communicator made ", comm->size(),
             " ranks with this one at ", comm->rank());
    return comm;
}

// Megatron's default embedding ranks: the first and last stage of each pipeline (the first
// alone with one stage).
Groups embedding_groups(const Groups& pp_groups) {
    Groups groups;
    for (const auto& pp : pp_groups) {
        if (pp.size() == 1)
            groups.push_back({pp.front()});
        else
            groups.push_back({pp.front(), pp.back()});
    }
    return groups;
}

}  // namespace

ParallelState::ParallelState(std::unique_ptr<Communicator> world, const ParallelConfig& config)
    : config_(config), world_(std::move(world)) {
    MT_CHECK(world_ != nullptr, "ParallelState needs a world communicator");
    if (config_.expert_tensor_parallel == 0)
        config_.expert_tensor_parallel = config_.tensor_parallel;
    const int tp = config_.tensor_parallel, pp = config_.pipeline_parallel,
              cp = config_.context_parallel, ep = config_.expert_parallel,
              etp = config_.expert_tensor_parallel;
    check_size(tp, "--tensor-model-parallel-size");
    check_size(pp, "--pipeline-model-parallel-size");
    check_size(cp, "--context-parallel-size");
    check_size(ep, "--expert-model-parallel-size");
    check_size(etp, "--expert-tensor-parallel-size");

    const int world_size = world_->size();
    const int64_t model_size = int64_t{tp} * pp * cp;
    MT_CHECK(world_size % model_size == 0, "the world size (", world_size,
             " ranks) is not a multiple of --tensor-model-parallel-size (", tp,
             ") x --pipeline-model-parallel-size (", pp, ") x --context-parallel-size (", cp,
             ") = ", model_size,
             world_size == 1 ? "; start the run with mpirun -np N (or srun)" : "");
    const int64_t expert_model_size = int64_t{etp} * ep * pp;
    MT_CHECK(world_size % expert_model_size == 0, "the world size (", world_size,
             " ranks) is not a multiple of --expert-tensor-parallel-size (", etp,
             ") x --expert-model-parallel-size (", ep, ") x --pipeline-model-parallel-size (", pp,
             ") = ", expert_model_size);
    const int dp = static_cast<int>(world_size / model_size);
    const int edp = static_cast<int>(world_size / expert_model_size);
    // Megatron lays pp out last unless asked for tp-pp-dp; then the dense and the expert layers
    // only share their pipelines when their data parallel sizes agree.
    MT_CHECK(!config_.tp_pp_dp_mapping || pp == 1 || edp == dp,
             "with --use-tp-pp-dp-mapping and pipeline parallelism the expert layers need the "
             "data parallel size of the dense ones (",
             dp, "), but --expert-tensor-parallel-size (", etp,
             ") x --expert-model-parallel-size (", ep, ") gives ", edp,
             "; make etp x ep equal to --tensor-model-parallel-size (", tp,
             ") x --context-parallel-size (", cp, ")");

    // The decoder generator has ep = 1 and the expert one cp = 1; both use one order.
    const std::vector<std::string> order =
        config_.tp_pp_dp_mapping ? std::vector<std::string>{"tp", "cp", "ep", "pp", "dp"}
                                 : std::vector<std::string>{"tp", "cp", "ep", "dp", "pp"};
    const std::vector<int> sizes = config_.tp_pp_dp_mapping ? std::vector<int>{tp, cp, 1, pp, dp}
                                                            : std::vector<int>{tp, cp, 1, dp, pp};
    const std::vector<int> expert_sizes = config_.tp_pp_dp_mapping
                                              ? std::vector<int>{etp, 1, ep, pp, edp}
                                              : std::vector<int>{etp, 1, ep, edp, pp};
    const Groups pp_groups = rank_groups(order, sizes, "pp");
    MT_CHECK(pp_groups == rank_groups(order, expert_sizes, "pp"),
             "the pipelines of the expert layers differ from those of the dense layers");

    // Every rank splits for every kind in the same order (Megatron's order of creation).
    auto& w = *world_;
    auto ranks = [this](Group g) -> std::vector<int>& { return ranks_[static_cast<size_t>(g)]; };
    dp_cp_ = split_into(w, rank_groups(order, sizes, "dp-cp"), "dp-cp", ranks(Group::dp_cp));
    dp_ = split_into(w, rank_groups(order, sizes, "dp"), "dp", ranks(Group::dp));
    cp_ = split_into(w, rank_groups(order, sizes, "cp"), "cp", ranks(Group::cp));
    mp_ = split_into(w, rank_groups(order, sizes, "tp-pp"), "model parallel",
                     ranks(Group::model_parallel));
    tp_ = split_into(w, rank_groups(order, sizes, "tp"), "tp", ranks(Group::tp));
    pp_ = split_into(w, pp_groups, "pp", ranks(Group::pp));
    embedding_ = split_into(w, embedding_groups(pp_groups), "embedding", ranks(Group::embedding));
    tp_cp_ = split_into(w, rank_groups(order, sizes, "tp-cp"), "tp-cp", ranks(Group::tp_cp));
    ep_ = split_into(w, rank_groups(order, expert_sizes, "ep"), "ep", ranks(Group::ep));
    etp_ =
        split_into(w, rank_groups(order, expert_sizes, "tp"), "expert tp", ranks(Group::expert_tp));
    etp_ep_ = split_into(w, rank_groups(order, expert_sizes, "tp-ep"), "expert tp-ep",
                         ranks(Group::expert_tp_ep));
    edp_ =
        split_into(w, rank_groups(order, expert_sizes, "dp"), "expert dp", ranks(Group::expert_dp));

    // rank_groups partitions the world, so only the embedding group can leave a rank out.
    for (auto* comm :
         {&dp_cp_, &dp_, &cp_, &mp_, &tp_, &pp_, &tp_cp_, &ep_, &etp_, &etp_ep_, &edp_})
        MT_CHECK(*comm != nullptr, "rank ", w.rank(), " is missing from one of its groups");
}

ParallelState::~ParallelState() = default;

std::unique_ptr<ParallelState> ParallelState::single_process() {
    return std::make_unique<ParallelState>(make_local_communicator(), ParallelConfig{});
}

Communicator* ParallelState::group(Group g) const {
    switch (g) {
        case Group::tp:
            return tp_.get();
        case Group::cp:
            return cp_.get();
        case Group::dp:
            return dp_.get();
        case Group::dp_cp:
            return dp_cp_.get();
        case Group::pp:
            return pp_.get();
        case Group::model_parallel:
            return mp_.get();
        case Group::tp_cp:
            return tp_cp_.get();
        case Group::embedding:
            return embedding_.get();
        case Group::expert_tp:
            return etp_.get();
        case Group::ep:
            return ep_.get();
        case Group::expert_dp:
            return edp_.get();
        case Group::expert_tp_ep:
            return etp_ep_.get();
    }
    MT_FAIL("unknown process group kind ", int(g));
}

}  // namespace mt::parallel
