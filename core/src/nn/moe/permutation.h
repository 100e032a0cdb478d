// What the MoE token dispatchers share (and the factory that picks one): the routing packed per
// token ([probs | map], one row of doubles, as it travels between ranks), the permutation of tokens
// into blocks per expert, and the row moves on the backend (gather, scatter-add) that permute and
// un-permute tokens.
#pragma once

#include <cstdint>
#include <vector>

#include <memory>

#include "mt/backend.h"
#include "mt/nn/moe/dispatcher.h"
#include "mt/nn/moe/routing.h"

namespace mt::nn::detail {

// Each token's row [probs (E) | map (E)] (tokens x 2E).
std::vector<double> pack_routing(const Routing& routing);

// The tokens that experts [first, first + count) take, expert by expert, each expert's tokens in
// order (Megatron's permute): their token, expert and prob, and how many each expert takes.
struct Permutation {
    std::vector<int64_t> token, expert, per_expert;
    std::vector<double> prob;
};
Permutation permute_by_expert(const double* packed, int64_t tokens, int64_t experts, int64_t first,
                              int64_t count);

// The routing probs' gradient per token and expert (tokens x experts, host): row i of
// `dprobs` (M, f32 or f64, any device) belongs to token index[i] at expert experts[i].
std::vector<double> probs_per_token(Backend& backend, const Tensor& dprobs, const Tensor& index,
                                    const std::vector<int64_t>& experts, int64_t tokens,
                                    int64_t num_experts);

// An i64 index tensor on the backend.
Tensor index_tensor(Backend& backend, std::vector<int64_t> index);
// rows (M, H) = x[index] (M may be 0).
Tensor gather_rows(Backend& backend, const Tensor& x, const Tensor& index);
// (n, H) zeros with rows[i] added at index[i].
Tensor scatter_add_rows(Backend& backend, const Tensor& rows, const Tensor& index, int64_t n);

// The two dispatchers (allgather_dispatcher.cpp, alltoall_dispatcher.cpp).
std::unique_ptr<TokenDispatcher> make_allgather_dispatcher(const MoeConfig& config,
                                                           Backend& backend);
std::unique_ptr<TokenDispatcher> make_alltoall_dispatcher(const MoeConfig& config,
                                                          Backend& backend);

}  // namespace mt::nn::detail
