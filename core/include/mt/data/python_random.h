// Python's random module (random.Random): the Mersenne Twister seeded as random.seed(int) seeds
// it, and the draws Megatron's scripts make from it (random(), getrandbits, randint,
// expovariate), bit for bit, so that what Megatron derives from Python's generator (its
// inference examples' synthetic requests) comes out the same. The twister itself is
// std::mt19937, as numpy's (mt/data/numpy_random.h); only the seeding is Python's.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "mt/api.h"

namespace mt::data {

// MT19937's 624 state words seeded by init_genrand(seed) (Knuth's 1812433253 recurrence): the
// start of init_by_array, numpy's legacy RandomState(seed) key and torch's CPU generator.
MT_API std::array<uint32_t, 624> mt19937_init_genrand(uint32_t seed);

// random.seed(seed)'s state words (random.getstate()[1][:624], the index 624 after them):
// init_by_array over the seed's 32-bit words, low first.
MT_API std::array<uint32_t, 624> python_seed_words(uint64_t seed);

class MT_API PythonRandom {
  public:
    // random.seed(seed).
    explicit PythonRandom(uint64_t seed);

    uint32_t next_uint32() { return uint32_t(engine_()); }
    // random(): 53 random bits from two draws (27 and 26 bits).
    double random();
    // getrandbits(k), 0 < k <= 32: one draw's top k bits.
    uint32_t getrandbits(int k);
    // randint(a, b), a <= b: a + _randbelow(b - a + 1), by getrandbits(bit_length) with
    // rejection.
    int64_t randint(int64_t a, int64_t b);
    // expovariate(lambd): -log(1 - random()) / lambd.
    double expovariate(double lambd);

  private:
    std::mt19937 engine_;
};

}  // namespace mt::data
