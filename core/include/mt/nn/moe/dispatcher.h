// Token dispatch of a MoE layer (Megatron-core's token_dispatcher.py), chosen by
// --moe-token-dispatcher-type:
//   allgather  every rank of the expert tensor-and-model-parallel group gathers the group's
//              tokens and routing, permutes the tokens its local experts take, and after the
//              experts scatters their outputs back onto the tokens and reduce-scatters them to
//              the ranks they came from (summing expert-tensor-parallel partial outputs).
//   alltoall   each rank permutes its own tokens by expert and sends each expert-parallel rank
//              the rows of its experts (all_to_all with variable splits), the expert tensor-
//              parallel ranks gather what their group received, the rows are sorted by local
//              expert; the way back returns every row to its token's rank (partial outputs
//              summed) and un-permutes them.
// Both give each local expert its tokens in a block, tokens in order within it, with their
// routing probs; backward runs the same moves in reverse. One process: the local permutation.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/moe/config.h"
#include "mt/nn/moe/routing.h"

namespace mt::nn {

class MT_API TokenDispatcher {
  public:
    // What the combine and the backward need; each dispatcher keeps its own.
    struct State {
        virtual ~State() = default;
        std::vector<int64_t> rows;  // per local expert
    };
    struct Dispatched {
        Tensor x;      // (M, H): rows[j] tokens of local expert j, in order
        Tensor probs;  // (M): their routing probs
    };

    virtual ~TokenDispatcher() = default;
    // x (N, H) this rank's tokens, `routing` theirs (N x experts); probs in `probs_dtype`.
    virtual Dispatched dispatch(const Tensor& x, const Routing& routing, DType probs_dtype,
                                std::unique_ptr<State>& state) const = 0;
    // y (M, H) the experts' outputs -> (N, H): each token's sum over its experts.
    virtual Tensor combine(const Tensor& y, const State& state) const = 0;
    // d of combine's output (N, H) -> d of y (M, H).
    virtual Tensor combine_backward(const Tensor& dout, const State& state) const = 0;
    // d of the dispatched rows (M, H) and probs (M) -> dx (N, H) and d probs (N x experts, host).
    virtual std::pair<Tensor, std::vector<double>> dispatch_backward(const Tensor& dx_rows,
                                                                     const Tensor& dprobs,
                                                                     const State& state) const = 0;
};

// The dispatcher config.dispatcher names, over config.experts' groups.
MT_API std::unique_ptr<TokenDispatcher> make_token_dispatcher(const MoeConfig& config,
                                                              Backend& backend);

}  // namespace mt::nn
