// The alltoall dispatcher: each rank's tokens permuted by expert, exchanged with the expert-
// parallel ranks that hold those experts (all_to_all with variable splits), gathered over the
// expert tensor-parallel ranks, sorted by local expert; the reverse moves for the way back.
#include <numeric>

#include "mt/error.h"
#include "mt/nn/moe/dispatcher.h"
#include "mt/parallel/collectives.h"
#include "permutation.h"

namespace mt::nn {

namespace {

int64_t total(const std::vector<int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), int64_t(0));
}

class AllToAllDispatcher final : public TokenDispatcher {
  public:
    struct ExchangeState final : State {
        int64_t tokens = 0;                         // this rank's
        Tensor local_index;                         // (M_send): each locally permuted row's token
        std::vector<int64_t> local_expert;          // (M_send): its global expert
        std::vector<int64_t> send_rows, recv_rows;  // per expert-parallel rank
        std::vector<int64_t> etp_rows;  // rows each expert tensor-parallel rank received
        Tensor order;                   // (M): the gathered row each expert-sorted row is
    };

    AllToAllDispatcher(const MoeConfig& config, Backend& backend)
        : experts_(config.router.num_experts),
          local_(config.router.num_experts / config.experts.ep_size()),
          ep_(active(config.experts.ep)),
          etp_(active(config.experts.etp)),
          ep_rank_(config.experts.ep_rank()),
          backend_(&backend) {}

    Dispatched dispatch(const Tensor& x, const Routing& routing, DType probs_dtype,
                        std::unique_ptr<State>& state) const override {
        const int64_t N = x.size(0), E = experts_, L = local_;
        MT_CHECK(routing.tokens == N && routing.experts == E, "MoE dispatch: routing of ",
                 routing.tokens, " tokens x ", routing.experts, " experts for ", x.describe());
        const std::vector<double> packed = detail::pack_routing(routing);
        detail::Permutation p = detail::permute_by_expert(packed.data(), N, E, 0, E);
        auto s = std::make_unique<ExchangeState>();
        s->tokens = N;
        s->local_expert = p.expert;
        s->local_index = detail::index_tensor(*backend_, p.token);
        // Every expert-parallel rank's count per expert: what each sends to which.
        const int ep_size = ep_ ? ep_->size() : 1;
        std::vector<int64_t> counts = gather_counts(ep_, p.per_expert);  // (ep_size x E)
        s->send_rows.assign(size_t(ep_size), 0);
        s->recv_rows.assign(size_t(ep_size), 0);
        std::vector<int64_t> chunks;  // rows received per (source, local expert)
        for (int r = 0; r < ep_size; ++r)
            for (int64_t j = 0; j < L; ++j) {
                s->send_rows[size_t(r)] += p.per_expert[size_t(r * L + j)];
                const int64_t n = counts[size_t(r * E + ep_rank_ * L + j)];
                s->recv_rows[size_t(r)] += n;
                chunks.push_back(n);
            }
        Tensor x_recv = exchange(ep_, detail::gather_rows(*backend_, x, s->local_index),
                                 s->send_rows, s->recv_rows);
        Tensor p_recv = exchange(ep_, host_tensor(std::move(p.prob), {int64_t(p.token.size()), 1}),
                                 s->send_rows, s->recv_rows);
        // The expert tensor-parallel ranks hold the same experts: each gets all their rows.
        const int etp_size = etp_ ? etp_->size() : 1;
        std::vector<int64_t> all_chunks = gather_counts(etp_, chunks);  // (etp x ep_size·L)
        s->etp_rows.assign(size_t(etp_size), 0);
        for (int q = 0; q < etp_size; ++q)
            for (size_t c = 0; c < chunks.size(); ++c)
                s->etp_rows[size_t(q)] += all_chunks[q * chunks.size() + c];
        Tensor x_all = gather_blocks(x_recv, s->etp_rows);
        Tensor p_all = gather_blocks(p_recv, s->etp_rows);
        // Sorted by local expert: chunk (q, source, j) at its offset, j-major.
        std::vector<int64_t> offsets(all_chunks.size());
        std::exclusive_scan(all_chunks.begin(), all_chunks.end(), offsets.begin(), int64_t(0));
        std::vector<int64_t> order;
        s->rows.assign(size_t(L), 0);
        for (int64_t j = 0; j < L; ++j)
            for (int q = 0; q < etp_size; ++q)
                for (int r = 0; r < ep_size; ++r) {
                    const size_t c = size_t(q) * chunks.size() + size_t(r * L + j);
                    for (int64_t i = 0; i < all_chunks[c]; ++i) order.push_back(offsets[c] + i);
                    s->rows[size_t(j)] += all_chunks[c];
                }
        s->order = detail::index_tensor(*backend_, order);
        Tensor probs = detail::gather_rows(*backend_, backend_->contiguous(p_all), s->order);
        Dispatched d{detail::gather_rows(*backend_, x_all, s->order),
                     backend_->cast_to(probs.view({probs.size(0)}), probs_dtype)};
        state = std::move(s);
        return d;
    }

    Tensor combine(const Tensor& y, const State& state) const override {
        return to_tokens(y, static_cast<const ExchangeState&>(state));
    }

    Tensor combine_backward(const Tensor& dout, const State& state) const override {
        const auto& s = static_cast<const ExchangeState&>(state);
        Tensor d_recv = exchange(ep_, detail::gather_rows(*backend_, dout, s.local_index),
                                 s.send_rows, s.recv_rows);
        return detail::gather_rows(*backend_, gather_blocks(d_recv, s.etp_rows), s.order);
    }

    std::pair<Tensor, std::vector<double>> dispatch_backward(const Tensor& dx_rows,
                                                             const Tensor& dprobs,
                                                             const State& state) const override {
        const auto& s = static_cast<const ExchangeState&>(state);
        Tensor dp = backend_->cast_to(dprobs, DType::f64).contiguous();
        Tensor dp_send = back_to_senders(dp.view({dp.numel(), 1}), s);
        return {to_tokens(dx_rows, s),
                detail::probs_per_token(*backend_, dp_send.view({dp_send.numel()}), s.local_index,
                                        s.local_expert, s.tokens, experts_)};
    }

  private:
    static Communicator* active(Communicator* group) {
        return group && group->size() > 1 ? group : nullptr;
    }

    // Every rank's `counts` (one group-wide list, rank-major).
    static std::vector<int64_t> gather_counts(Communicator* group,
                                              const std::vector<int64_t>& counts) {
        if (!group) return counts;
        std::vector<int64_t> copy = counts;
        Tensor all = parallel::all_gather_along(
            *group, host_tensor(std::move(copy), {int64_t(counts.size())}), 0);
        return std::vector<int64_t>(all.data<int64_t>(), all.data<int64_t>() + all.numel());
    }

    // all_to_all of x's rows: send[r] to rank r, recv[r] from it.
    Tensor exchange(Communicator* group, const Tensor& x, const std::vector<int64_t>& send,
                    const std::vector<int64_t>& recv) const {
        if (!group) return x;
        Tensor in = x.contiguous();
        Tensor out = Tensor::empty({total(recv), x.size(1)}, x.dtype());
        group->all_to_all(in, send, out, recv);
        return out;
    }

    // The expert tensor-parallel ranks' blocks, block q of `rows[q]` rows, on every rank.
    Tensor gather_blocks(const Tensor& mine, const std::vector<int64_t>& rows) const {
        if (!etp_) return mine;
        const int n = etp_->size();
        Tensor copies = Tensor::empty({mine.size(0) * n, mine.size(1)}, mine.dtype());
        Tensor in = mine.contiguous();
        for (int q = 0; q < n; ++q)
            copies.slice(0, q * mine.size(0), (q + 1) * mine.size(0)).copy_from(in);
        return exchange(etp_, copies, std::vector<int64_t>(size_t(n), mine.size(0)), rows);
    }

    // The inverse of gather_blocks' share: each block's rows summed over the ranks (partial
    // outputs of split experts), this rank's block kept.
    Tensor sum_blocks(const Tensor& all, const std::vector<int64_t>& rows) const {
        if (!etp_) return all;
        const int n = etp_->size();
        const int64_t mine = rows[size_t(etp_->rank())];
        Tensor parts = exchange(etp_, all, rows, std::vector<int64_t>(size_t(n), mine));
        Tensor sum = backend_->contiguous(parts.slice(0, 0, mine)).clone();
        for (int q = 1; q < n; ++q)
            backend_->add(sum, backend_->contiguous(parts.slice(0, q * mine, (q + 1) * mine)), sum);
        return sum;
    }

    // Expert-sorted rows (M, C) back to the rows this rank sent, in its local permuted order.
    Tensor back_to_senders(const Tensor& rows, const ExchangeState& s) const {
        const int64_t gathered = total(s.etp_rows);
        Tensor all = detail::scatter_add_rows(*backend_, rows, s.order, gathered);
        return exchange(ep_, sum_blocks(all, s.etp_rows), s.recv_rows, s.send_rows);
    }

    Tensor to_tokens(const Tensor& rows, const ExchangeState& s) const {
        return detail::scatter_add_rows(*backend_, back_to_senders(rows, s), s.local_index,
                                        s.tokens);
    }

    int64_t experts_, local_;
    Communicator *ep_, *etp_;  // null when of one rank
    int64_t ep_rank_;
    Backend* backend_;
};

}  // namespace

std::unique_ptr<TokenDispatcher> detail::make_alltoall_dispatcher(const MoeConfig& config,
                                                                  Backend& backend) {
    return std::make_unique<AllToAllDispatcher>(config, backend);
}

}  // namespace mt::nn
