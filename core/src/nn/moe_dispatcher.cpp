// The allgather dispatcher: gathers, permutes by the host routing, scatters back.
#include "mt/nn/moe_dispatcher.h"

#include "mt/error.h"
#include "mt/parallel/collectives.h"

namespace mt::nn {

namespace {

bool active(const Communicator* group) {
    return group && group->size() > 1;
}

}  // namespace

AllGatherDispatcher::AllGatherDispatcher(const MoeConfig& config, Backend& backend)
    : num_experts_(config.router.num_experts),
      first_expert_(config.router.num_experts / config.experts.ep_size() *
                    config.experts.ep_rank()),
      local_experts_(config.router.num_experts / config.experts.ep_size()),
      group_(config.experts.tp_ep),
      backend_(&backend) {}

AllGatherDispatcher::Dispatched AllGatherDispatcher::dispatch(const Tensor& x,
                                                              const Routing& routing,
                                                              DType probs_dtype, State& s) const {
    const int64_t N = x.size(0), E = num_experts_;
    MT_CHECK(routing.tokens == N && routing.experts == E, "MoE dispatch: routing of ",
             routing.tokens, " tokens x ", routing.experts, " experts for ", x.describe());
    // The group's tokens and their routing ([probs | map] per token, gathered in one go).
    Tensor x_all = x;
    std::vector<double> route(size_t(N * 2 * E));
    for (int64_t t = 0; t < N; ++t)
        for (int64_t e = 0; e < E; ++e) {
            route[size_t(t * 2 * E + e)] = routing.probs[size_t(t * E + e)];
            route[size_t(t * 2 * E + E + e)] = routing.map[size_t(t * E + e)];
        }
    Tensor route_all = host_tensor(std::move(route), {N, 2 * E});
    if (active(group_)) {
        x_all = parallel::all_gather_along(*group_, x, 0);
        route_all = parallel::all_gather_along(*group_, route_all, 0);
    }
    const int64_t T = x_all.size(0);
    const double* r = route_all.data<double>();
    std::vector<int64_t> index;
    std::vector<double> probs;
    s = State{N, T, Tensor(), {}, std::vector<int64_t>(size_t(local_experts_), 0)};
    for (int64_t j = 0; j < local_experts_; ++j) {
        const int64_t e = first_expert_ + j;
        for (int64_t t = 0; t < T; ++t)
            if (r[t * 2 * E + E + e] != 0) {
                index.push_back(t);
                probs.push_back(r[t * 2 * E + e]);
                s.experts.push_back(e);
                ++s.rows[size_t(j)];
            }
    }
    const int64_t M = int64_t(index.size());
    s.index = backend_->contiguous(host_tensor(std::move(index), {M}));
    Dispatched d;
    d.x = backend_->empty({M, x.size(1)}, x.dtype());
    if (M > 0) backend_->embedding_forward(backend_->contiguous(x_all), s.index, d.x);
    Tensor p = host_tensor(std::move(probs), {M});
    d.probs = backend_->cast_to(backend_->contiguous(p), probs_dtype);
    return d;
}

Tensor AllGatherDispatcher::scatter_to_tokens(const Tensor& rows, const State& s) const {
    Tensor all = backend_->zeros({s.gathered, rows.size(1)}, rows.dtype());
    if (rows.size(0) > 0) backend_->embedding_backward(backend_->contiguous(rows), s.index, all);
    return active(group_) ? parallel::reduce_scatter_along(*group_, all, 0, ReduceOp::sum) : all;
}

Tensor AllGatherDispatcher::combine(const Tensor& y, const State& s) const {
    return scatter_to_tokens(y, s);
}

Tensor AllGatherDispatcher::combine_backward(const Tensor& dout, const State& s) const {
    Tensor all =
        active(group_) ? parallel::all_gather_along(*group_, dout, 0) : backend_->contiguous(dout);
    const int64_t M = s.index.numel();
    Tensor d = backend_->empty({M, dout.size(1)}, dout.dtype());
    if (M > 0) backend_->embedding_forward(all, s.index, d);
    return d;
}

std::pair<Tensor, std::vector<double>> AllGatherDispatcher::dispatch_backward(
    const Tensor& dx_rows, const Tensor& dprobs, const State& s) const {
    Tensor dx = scatter_to_tokens(dx_rows, s);
    const int64_t E = num_experts_, M = s.index.numel();
    Tensor dp_rows = backend_->cast_to(dprobs, DType::f64).contiguous();
    Tensor index = s.index.contiguous();
    std::vector<double> all(size_t(s.gathered * E), 0.0);
    for (int64_t i = 0; i < M; ++i)
        all[size_t(index.data<int64_t>()[i] * E + s.experts[size_t(i)])] +=
            dp_rows.data<double>()[i];
    Tensor dp = host_tensor(std::move(all), {s.gathered, E});
    if (active(group_)) dp = parallel::reduce_scatter_along(*group_, dp, 0, ReduceOp::sum);
    const double* v = dp.data<double>();
    return {dx, std::vector<double>(v, v + s.tokens * E)};
}

}  // namespace mt::nn
