#include "mt/data/python_random.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "mt/data/numpy_random.h"
#include "mt/error.h"

namespace mt::data {
namespace {

constexpr int kN = 624;

}  // namespace

std::array<uint32_t, 624> mt19937_init_genrand(uint32_t seed) {
    std::array<uint32_t, 624> mt{};
    mt[0] = seed;
    for (int i = 1; i < kN; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + uint32_t(i);
    return mt;
}

std::array<uint32_t, 624> python_seed_words(uint64_t seed) {
    std::vector<uint32_t> key;
    for (uint64_t v = seed; v != 0; v >>= 32) key.push_back(uint32_t(v));
    if (key.empty()) key.push_back(0);
    // init_by_array, as Modules/_randommodule.c writes it.
    std::array<uint32_t, 624> mt = mt19937_init_genrand(19650218u);
    int i = 1;
    size_t j = 0;
    for (size_t k = std::max(size_t(kN), key.size()); k > 0; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
        ++i;
        ++j;
        if (i >= kN) {
            mt[0] = mt[kN - 1];
            i = 1;
        }
        if (j >= key.size()) j = 0;
    }
    for (int k = kN - 1; k > 0; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
        ++i;
        if (i >= kN) {
            mt[0] = mt[kN - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;  // a non-zero initial array
    return mt;
}

PythonRandom::PythonRandom(uint64_t seed) {
    // The engine's textual form is its 624 words and (libstdc++) the index: 624 asks for the
    // refill before the first draw, as Python's index does after seeding.
    std::stringstream words;
    for (uint32_t w : python_seed_words(seed)) words << w << ' ';
    words << kN;
    words >> engine_;
    MT_CHECK(!words.fail(), "PythonRandom: could not set the Mersenne Twister's state");
}

double PythonRandom::random() {
    const uint32_t first = next_uint32();
    return mt19937_double(first, next_uint32());
}

uint32_t PythonRandom::getrandbits(int k) {
    MT_CHECK(k > 0 && k <= 32, "PythonRandom::getrandbits: ", k, " bits (1 to 32 here)");
    return next_uint32() >> (32 - k);
}

int64_t PythonRandom::randint(int64_t a, int64_t b) {
    MT_CHECK(a <= b, "randint(", a, ", ", b, "): empty range");
    const uint64_t n = uint64_t(b - a) + 1;
    int k = 0;
    while (k < 64 && (n >> k) != 0) ++k;  // n.bit_length()
    MT_CHECK(k <= 32, "randint(", a, ", ", b, "): ranges past 2^32 are not supported yet");
    uint64_t r = getrandbits(k);
    while (r >= n) r = getrandbits(k);
    return a + int64_t(r);
}

double PythonRandom::expovariate(double lambd) {
    return -std::log(1.0 - random()) / lambd;
}

}  // namespace mt::data
