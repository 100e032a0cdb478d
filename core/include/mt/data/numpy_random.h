// numpy's legacy numpy.random.RandomState for an integer seed: Megatron shuffles its dataset
// indices with it, so reproducing Megatron's sample order needs the same draws, bit for bit.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>

#include "mt/api.h"

namespace mt::data {

// A double in [0, 1) from two consecutive MT19937 draws, 27 + 26 bits: numpy's random_sample()
// and Python's random.random() alike.
inline double mt19937_double(uint32_t first, uint32_t second) {
    return ((first >> 5) * 67108864.0 + (second >> 6)) / 9007199254740992.0;
}

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

    // RandomState.random_sample() / random(): a double in [0, 1) from two draws, 27 + 26 bits.
    double random_sample() {
        const uint32_t first = next_uint32();
        return mt19937_double(first, next_uint32());
    }
    // RandomState.randint(low, high) with the default int64 dtype: low + a value in
    // [0, high - low - 1] by masked rejection (the legacy path, no Lemire), i.e. random_interval.
    int64_t randint(int64_t low, int64_t high);
    // RandomState.choice(len(p), p=p), one draw: the cumulative sum of p divided by its last
    // entry, searched (side='right') for one random_sample(). Returns the chosen index.
    int64_t choice(std::span<const double> p);

    // RandomState.binomial(n, p): the legacy inversion algorithm, for n·min(p, 1 - p) <= 30
    // (numpy's BTPE beyond it is not implemented: an mt::Error).
    int64_t binomial(int64_t n, double p);

    // RandomState.geometric(p), the legacy inversion for p < 1/3: ceil(log1p(-U) / log(1 - p))
    // with U = random_sample() (numpy's search method for larger p is not implemented).
    int64_t geometric(double p);

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
