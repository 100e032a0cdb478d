// The allgather dispatcher: gathers the group's tokens and routing, permutes the local experts'
// share, scatters the outputs back and reduce-scatters them to their ranks.
#include "mt/error.h"
#include "mt/nn/moe/dispatcher.h"
#include "mt/parallel/collectives.h"
#include "permutation.h"

namespace mt::nn {

namespace {

class AllGatherDispatcher final : public TokenDispatcher {
  public:
    struct GatherState final : State {
        int64_t tokens = 0;            // this rank's
        int64_t gathered = 0;          // the group's
        Tensor index;                  // (M): the gathered token of each dispatched row
        std::vector<int64_t> experts;  // (M): each row's global expert
    };

    AllGatherDispatcher(const MoeConfig& config, Backend& backend)
        : experts_(config.router.num_experts),
          local_(config.router.num_experts / config.experts.ep_size()),
          first_(local_ * config.experts.ep_rank()),
          group_(config.experts.tp_ep && config.experts.tp_ep->size() > 1 ? config.experts.tp_ep
                                                                          : nullptr),
          backend_(&backend) {}

    Dispatched dispatch(const Tensor& x, const Routing& routing, DType probs_dtype,
                        std::unique_ptr<State>& state) const override {
        const int64_t N = x.size(0), E = experts_;
        MT_CHECK(routing.tokens == N && routing.experts == E, "MoE dispatch: routing of ",
                 routing.tokens, " tokens x ", routing.experts, " experts for ", x.describe());
        Tensor x_all = x;
        Tensor route = host_tensor(detail::pack_routing(routing), {N, 2 * E});
        if (group_) {
            x_all = parallel::all_gather_along(*group_, x, 0);
            route = parallel::all_gather_along(*group_, route, 0);
        }
        auto s = std::make_unique<GatherState>();
        s->tokens = N;
        s->gathered = x_all.size(0);
        detail::Permutation p =
            detail::permute_by_expert(route.data<double>(), s->gathered, E, first_, local_);
        s->rows = p.per_expert;
        s->experts = std::move(p.expert);
        s->index = detail::index_tensor(*backend_, std::move(p.token));
        const int64_t M = int64_t(s->experts.size());
        Dispatched d{detail::gather_rows(*backend_, x_all, s->index),
                     backend_->cast_to(backend_->contiguous(host_tensor(std::move(p.prob), {M})),
                                       probs_dtype)};
        state = std::move(s);
        return d;
    }

    Tensor combine(const Tensor& y, const State& state) const override {
        return to_tokens(y, static_cast<const GatherState&>(state));
    }

    Tensor combine_backward(const Tensor& dout, const State& state) const override {
        const auto& s = static_cast<const GatherState&>(state);
        Tensor all = group_ ? parallel::all_gather_along(*group_, dout, 0) : dout;
        return detail::gather_rows(*backend_, all, s.index);
    }

    std::pair<Tensor, std::vector<double>> dispatch_backward(const Tensor& dx_rows,
                                                             const Tensor& dprobs,
                                                             const State& state) const override {
        const auto& s = static_cast<const GatherState&>(state);
        const int64_t E = experts_;
        Tensor dp = host_tensor(
            detail::probs_per_token(*backend_, dprobs, s.index, s.experts, s.gathered, E),
            {s.gathered, E});
        if (group_) dp = parallel::reduce_scatter_along(*group_, dp, 0, ReduceOp::sum);
        const double* v = dp.data<double>();
        return {to_tokens(dx_rows, s), std::vector<double>(v, v + s.tokens * E)};
    }

  private:
    // Rows (M, H) scatter-added onto the group's tokens, then summed to this rank's share.
    Tensor to_tokens(const Tensor& rows, const GatherState& s) const {
        Tensor all = detail::scatter_add_rows(*backend_, rows, s.index, s.gathered);
        return group_ ? parallel::reduce_scatter_along(*group_, all, 0, ReduceOp::sum) : all;
    }

    int64_t experts_, local_, first_;
    Communicator* group_;  // expert tensor and model parallel; null: one process
    Backend* backend_;
};

}  // namespace

std::unique_ptr<TokenDispatcher> detail::make_allgather_dispatcher(const MoeConfig& config,
                                                                   Backend& backend) {
    return std::make_unique<AllGatherDispatcher>(config, backend);
}

}  // namespace mt::nn
