#include "mt/data/python_random.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mt/error.h"

namespace mt::data {
namespace {

constexpr int kN = 624, kM = 397;

}  // namespace

std::array<uint32_t, 624> mt19937_init_genrand(uint32_t seed) {
    std::array<uint32_t, 624> mt{};
    mt[0] = seed;
    for (int i = 1; i < kN; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + uint32_t(i);
    return mt;
}

PythonRandom::PythonRandom(uint64_t seed) {
    std::vector<uint32_t> key;
    for (uint64_t v = seed; v != 0; v >>= 32) key.push_back(uint32_t(v));
    if (key.empty()) key.push_back(0);
    // init_by_array, as Modules/_randommodule.c writes it.
    mt_ = mt19937_init_genrand(19650218u);
    int i = 1;
    size_t j = 0;
    for (size_t k = std::max(size_t(kN), key.size()); k > 0; --k) {
        mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
        ++i;
        ++j;
        if (i >= kN) {
            mt_[0] = mt_[kN - 1];
            i = 1;
        }
        if (j >= key.size()) j = 0;
    }
    for (int k = kN - 1; k > 0; --k) {
        mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
        ++i;
        if (i >= kN) {
            mt_[0] = mt_[kN - 1];
            i = 1;
        }
    }
    mt_[0] = 0x80000000u;  // a non-zero initial array
    index_ = kN;
}

uint32_t PythonRandom::next_uint32() {
    if (index_ >= kN) {  // genrand_uint32's refill of all 624 words
        auto mix = [](uint32_t a, uint32_t b) {
            const uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
            return (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        };
        int k = 0;
        for (; k < kN - kM; ++k) mt_[k] = mt_[k + kM] ^ mix(mt_[k], mt_[k + 1]);
        for (; k < kN - 1; ++k) mt_[k] = mt_[k + (kM - kN)] ^ mix(mt_[k], mt_[k + 1]);
        mt_[kN - 1] = mt_[kM - 1] ^ mix(mt_[kN - 1], mt_[0]);
        index_ = 0;
    }
    uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double PythonRandom::random() {
    const uint32_t a = next_uint32() >> 5, b = next_uint32() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
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
