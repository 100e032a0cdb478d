// ParallelStrategy interface: pipeline schedules (no-pipelining, 1F1B, interleaved) and
// data-parallel strategies (DDP, distributed optimizer), plus the parallel sizes in Megatron's
// order. Declared now; the parallelism issues implement the strategies.
#pragma once

#include <cstdint>
#include <string_view>

#include "mt/api.h"
#include "mt/error.h"

namespace mt {

// Sizes of the parallel dimensions; world = tp * cp * ep * dp * pp (ep within dp for MoE).
struct ParallelSizes {
    int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
    int world() const { return tp * pp * dp * cp; }
};

class Communicator;

class MT_API ParallelStrategy {
  public:
    virtual ~ParallelStrategy() = default;
    virtual std::string_view name() const = 0;  // "1f1b", "interleaved", "ddp", ...
    // Number of micro-batches in flight per stage this strategy needs for `sizes`.
    virtual int64_t in_flight_microbatches(const ParallelSizes& sizes,
                                           int64_t num_microbatches) const = 0;
};

}  // namespace mt
