// Communicator: collectives within one process group (a tp, pp, dp, cp or ep group).
// Single-process runs use the local communicator in core; MPI (CPU ranks) and NCCL (GPU
// ranks) are plugins. Every call is collective over the group unless it says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt {

enum class ReduceOp : uint8_t { sum, max, min, avg };

// A communication started and not yet known to be finished. The tensors it was given must stay
// alive and untouched until wait() returns.
class MT_API CommRequest {
  public:
    virtual ~CommRequest() = default;
    // Blocks until the operation is done; throws mt::Error when it failed.
    virtual void wait() = 0;
};

class MT_API Communicator {
  public:
    virtual ~Communicator() = default;
    virtual std::string_view name() const = 0;  // "local", "mpi", "nccl"
    virtual int rank() const = 0;               // rank within this group
    virtual int size() const = 0;

    // Tensors are contiguous; reductions take f32, f64, i32 and i64.
    virtual void all_reduce(Tensor& t, ReduceOp op) = 0;  // in place
    // out = concatenation of every rank's `in` along dim 0 (out has size()*in rows). `in` may
    // be this rank's own block of `out` (an in-place gather).
    virtual void all_gather(const Tensor& in, Tensor& out) = 0;
    // out = this rank's dim-0 slice of the reduction of every rank's `in`.
    virtual void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) = 0;
    virtual void broadcast(Tensor& t, int root) = 0;
    // Rank i sends send_rows[j] dim-0 rows of `in` (in order of j) to rank j, and receives
    // recv_rows[i] rows from each rank i into `out` (in rank order). Every row has the same
    // element count in `in` and `out`.
    virtual void all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                            std::span<const int64_t> recv_rows) = 0;
    // Point to point (not collective). Blocking forms.
    virtual void send(const Tensor& t, int dst) = 0;
    virtual void recv(Tensor& t, int src) = 0;
    virtual void barrier() = 0;

    // Asynchronous forms: they return at once, the request finishes the operation. Messages
    // between two ranks with the same tag arrive in the order they were sent. (NCCL matches by
    // order alone, ignoring tags: post a pair's sends and receives in the same order.)
    virtual std::unique_ptr<CommRequest> isend(const Tensor& t, int dst, int tag = 0) = 0;
    virtual std::unique_ptr<CommRequest> irecv(Tensor& t, int src, int tag = 0) = 0;
    virtual std::unique_ptr<CommRequest> iall_reduce(Tensor& t, ReduceOp op) = 0;
    virtual std::unique_ptr<CommRequest> ireduce_scatter(const Tensor& in, Tensor& out,
                                                         ReduceOp op) = 0;
    virtual std::unique_ptr<CommRequest> iall_gather(const Tensor& in, Tensor& out) = 0;

    // A new group of the ranks of this one that pass the same `color`, ordered by `key` (ties
    // by rank here). Collective over this group: every rank calls it and gets its own group.
    virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

    // Stops every process of the job (after a rank failed, so the others do not wait for it
    // forever). Does not return when the job has several processes, whatever the group; in a
    // job of one process it just returns.
    virtual void abort(int exit_code) = 0;

    // Payload bytes this rank has put into this group so far, independent of the algorithm:
    // all_reduce and reduce_scatter count their input, all_gather this rank's piece, broadcast
    // the tensor on the root only, all_to_all the rows sent to other ranks, point to point the
    // message (for the benchmark's bytes-per-group table).
    virtual int64_t bytes_sent() const = 0;

    // all_to_all with equal parts: size() equal dim-0 blocks each way.
    void all_to_all(const Tensor& in, Tensor& out);
};

// The group of one process: every collective is the identity.
MT_API std::unique_ptr<Communicator> make_local_communicator();

}  // namespace mt
