// numpy's legacy numpy.random.RandomState for an integer seed: Megatron shuffles its dataset
// indices with it, so reproducing Megatron's sample order needs the same draws, bit for bit.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>

#include "mt/api.h"

namespace mt::data {

class MT_API NumpyRandomState {
  public:
    // RandomState(seed) with a Python int seed in [0, 2^32) seeds MT19937 with init_genrand
    // (Knuth's 1812433253 recurrence), exactly what std::mt19937(seed) does.
    explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}

    uint32_t next_uint32() { return static_cast<uint32_t>(engine_()); }
    // numpy's mt19937 next_uint64: two 32-bit draws, the first one is the high half.
    uint64_t next_uint64() {
        uint64_t high = next_uint32();
        return (high << 32) | next_uint32();
    }
    // A uniform value in [0, max] by masked rejection, as numpy's random_interval does
    // (32-bit draws while max fits in 32 bits, else 64-bit draws).
    uint64_t random_interval(uint64_t max);

    // RandomState.shuffle of a 1-D array: Fisher-Yates from the last element down.
    template <class T>
    void shuffle(std::span<T> values) {
        for (size_t i = values.size(); i > 1; --i) {
            size_t j = static_cast<size_t>(random_interval(i - 1));
            std::swap(values[i - 1], values[j]);
        }
    }

  private:
    std::mt19937 engine_;
};

}  // namespace mt::data
