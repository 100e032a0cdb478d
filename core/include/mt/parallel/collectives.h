// Gathers and scatters along any dimension, built on the communicators' dim-0 collectives:
// Megatron's sequence parallelism gathers and reduce-scatters (B, T, H) activations along T.
// Also byte strings (checkpoint metadata) gathered and broadcast.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/communicator.h"
#include "mt/tensor.h"

namespace mt::parallel {

// Each function takes CPU tensors of any strides and returns a new contiguous CPU tensor;
// `dim` may be negative (counted from the back). The cost is one collective plus at most one
// block-wise strided copy (none when every dimension before `dim` has size 1, e.g. dim 0).
// Gathers move any dtype; reductions take what the communicator reduces (f32, f64, i32, i64).

// The concatenation of every rank's `in` along `dim` (every rank passes the same shape).
MT_API Tensor all_gather_along(Communicator& comm, const Tensor& in, int64_t dim);
// This rank's slice along `dim` of the reduction of every rank's `in`; in.size(dim) must be a
// multiple of comm.size().
MT_API Tensor reduce_scatter_along(Communicator& comm, const Tensor& in, int64_t dim, ReduceOp op);
// This rank's slice along `dim` (in.size(dim) a multiple of comm.size()) as a contiguous copy;
// no communication.
MT_API Tensor split_along(const Communicator& comm, const Tensor& in, int64_t dim);

// A few host numbers (loss sums, token counts, exit flags) reduced over the group, in place.
MT_API void all_reduce_values(Communicator& comm, std::vector<double>& values, ReduceOp op);

// Byte strings between ranks (checkpoint metadata, paths): every rank's `bytes`, in rank order;
// and the root's `bytes` on every rank.
MT_API std::vector<std::string> all_gather_bytes(Communicator& comm, std::string_view bytes);
MT_API std::string broadcast_bytes(Communicator& comm, std::string bytes, int root);

}  // namespace mt::parallel
