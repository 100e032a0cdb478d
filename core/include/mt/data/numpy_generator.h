// numpy's Generator as numpy.random.default_rng(seed) builds it: PCG64 seeded through a
// SeedSequence, and Generator.integers for int32 (Lemire's bounded draws). Megatron's mock GPT
// data draws its document lengths with it, so reproducing them needs the same draws, bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::data {

class MT_API NumpyGenerator {
  public:
    // default_rng(seed) for a Python int seed in [0, 2^32).
    explicit NumpyGenerator(uint32_t seed);

    // PCG64 (XSL-RR 128/64): one step of the 128-bit LCG, then the output of the new state.
    uint64_t next_uint64();
    // Half of a 64-bit draw, the low half first (numpy's buffered next_uint32).
    uint32_t next_uint32();
    // Generator.integers(low, high, size=n, dtype=numpy.int32): values in [low, high).
    std::vector<int32_t> integers_int32(int32_t low, int32_t high, int64_t n);

  private:
    unsigned __int128 state_ = 0, increment_ = 0;
    bool has_uint32_ = false;
    uint32_t uint32_ = 0;
};

}  // namespace mt::data
