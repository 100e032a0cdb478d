// Token dispatch of a MoE layer: Megatron-core's MoEAllGatherTokenDispatcher. Every rank of the
// expert tensor-and-model-parallel group gathers the group's tokens and their routing, permutes
// the tokens its local experts take into one block per expert (tokens in order within each), and
// after the experts scatters their outputs back onto the tokens and reduce-scatters them to the
// ranks they came from (summing expert-tensor-parallel partial outputs on the way). Backward
// runs the same moves in reverse. One process: no communication, the local permutation alone.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/moe_config.h"
#include "mt/nn/moe_routing.h"

namespace mt::nn {

class MT_API AllGatherDispatcher {
  public:
    // What the combine and the backward need.
    struct State {
        int64_t tokens = 0;            // this rank's
        int64_t gathered = 0;          // the group's
        Tensor index;                  // (M) i64: the gathered token of each dispatched row
        std::vector<int64_t> experts;  // (M): the global expert of each row
        std::vector<int64_t> rows;     // per local expert
    };
    struct Dispatched {
        Tensor x;      // (M, H): rows[j] tokens of local expert j, in order
        Tensor probs;  // (M): their routing probs
    };

    AllGatherDispatcher(const MoeConfig& config, Backend& backend);

    // x (N, H) this rank's tokens, `routing` theirs (N x experts); probs in `probs_dtype`.
    Dispatched dispatch(const Tensor& x, const Routing& routing, DType probs_dtype,
                        State& state) const;
    // y (M, H) the experts' outputs -> (N, H): each token's sum over its experts.
    Tensor combine(const Tensor& y, const State& state) const;
    // d of combine's output (N, H) -> d of y (M, H).
    Tensor combine_backward(const Tensor& dout, const State& state) const;
    // d of the dispatched rows (M, H) and probs (M) -> dx (N, H) and d probs (N x experts, host).
    std::pair<Tensor, std::vector<double>> dispatch_backward(const Tensor& dx_rows,
                                                             const Tensor& dprobs,
                                                             const State& state) const;

  private:
    // Scatter-adds rows (M, H) onto `tokens` rows and sums them to this rank's share.
    Tensor scatter_to_tokens(const Tensor& rows, const State& state) const;

    int64_t num_experts_, first_expert_, local_experts_;
    Communicator* group_;  // expert tensor and model parallel; null: one process
    Backend* backend_;
};

}  // namespace mt::nn
