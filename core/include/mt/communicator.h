// Communicator: collectives within one process group (a tp, pp, dp, cp or ep group).
// Single-process runs use the local communicator in core; MPI (CPU ranks) and NCCL (GPU
// ranks) are plugins. Every call is collective over the group unless it says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt {

enum class ReduceOp : uint8_t { sum, max, min, avg };

class MT_API Communicator {
  public:
    virtual ~Communicator() = default;
    virtual std::string_view name() const = 0;
    virtual int rank() const = 0;  // rank within this group
    virtual int size() const = 0;

    virtual void all_reduce(Tensor& t, ReduceOp op) = 0;  // in place
    // out = concatenation of every rank's `in` along dim 0 (out has size()*in rows).
    virtual void all_gather(const Tensor& in, Tensor& out) = 0;
    // out = this rank's dim-0 slice of the reduction of every rank's `in`.
    virtual void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) = 0;
    virtual void broadcast(Tensor& t, int root) = 0;
    // Point to point (not collective).
    virtual void send(const Tensor& t, int dst) = 0;
    virtual void recv(Tensor& t, int src) = 0;
    virtual void barrier() = 0;
};

// The group of one process: every collective is the identity.
MT_API std::unique_ptr<Communicator> make_local_communicator();

}  // namespace mt
