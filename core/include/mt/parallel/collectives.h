// Gathers and scatters along any dimension, built on the communicators' dim-0 collectives:
// Megatron's sequence parallelism gathers and reduce-scatters (B, T, H) activations along T.
#pragma once

#include <cstdint>
#include <memory>

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

class PendingTensor;
// The asynchronous forms: they start the collective and return at once.
MT_API PendingTensor iall_gather_along(Communicator& comm, const Tensor& in, int64_t dim);
MT_API PendingTensor ireduce_scatter_along(Communicator& comm, const Tensor& in, int64_t dim,
                                           ReduceOp op);

// A gather or reduce-scatter in flight whose result is a new tensor (to overlap the
// communication with compute). Destroying it unfinished waits, so the communicator never
// writes into freed buffers.
class MT_API PendingTensor {
  public:
    PendingTensor() = default;
    PendingTensor(PendingTensor&&) noexcept = default;
    PendingTensor& operator=(PendingTensor&& other) noexcept;
    ~PendingTensor();

    // Blocks until the collective is done and returns its result (again on later calls).
    // Throws mt::Error when the communication failed.
    Tensor wait();
    bool pending() const { return request_ != nullptr; }

  private:
    friend PendingTensor iall_gather_along(Communicator&, const Tensor&, int64_t);
    friend PendingTensor ireduce_scatter_along(Communicator&, const Tensor&, int64_t, ReduceOp);
    void finish_quietly() noexcept;

    std::unique_ptr<CommRequest> request_;
    Tensor source_;  // keeps the communicator's input alive while in flight
    Tensor buffer_;  // rank-major gather buffer, rearranged into result_ after the wait
    Tensor result_;
    int64_t outer_ = 0, parts_ = 0, piece_bytes_ = 0;  // the rearrangement's shape
};

}  // namespace mt::parallel
