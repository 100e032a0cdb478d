// numpy's SeedSequence (bit_generator.pyx), PCG64 (pcg64.h) and the int32 bounded draw
// (distributions.c buffered_bounded_lemire_uint32), written from their definitions.
#include "mt/data/numpy_generator.h"

#include <array>

#include "mt/error.h"

namespace mt::data {

namespace {

using u128 = unsigned __int128;

constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
    value ^= hash_const;
    hash_const *= kMultA;
    value *= hash_const;
    return value ^ (value >> kXShift);
}

uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t result = kMixMultL * x - kMixMultR * y;
    return result ^ (result >> kXShift);
}

// SeedSequence(seed).generate_state(4, uint64): a pool of four words mixed from the entropy
// [seed], then drawn out as eight 32-bit words read as four little-endian 64-bit ones.
std::array<uint64_t, 4> seed_sequence_state(uint32_t seed) {
    std::array<uint32_t, 4> pool{};
    uint32_t hash_const = kInitA;
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = hashmix(i == 0 ? seed : 0, hash_const);
    for (size_t src = 0; src < pool.size(); ++src)
        for (size_t dst = 0; dst < pool.size(); ++dst)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
    std::array<uint32_t, 8> words{};
    uint32_t draw_const = kInitB;
    for (size_t i = 0; i < words.size(); ++i) {
        uint32_t v = pool[i % pool.size()] ^ draw_const;
        draw_const *= kMultB;
        v *= draw_const;
        words[i] = v ^ (v >> kXShift);
    }
    std::array<uint64_t, 4> out{};
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = uint64_t(words[2 * i]) | (uint64_t(words[2 * i + 1]) << 32);
    return out;
}

constexpr u128 kMultiplier = (u128(0x2360ed051fc65da4ull) << 64) | 0x4385df649fccf645ull;

}  // namespace

NumpyGenerator::NumpyGenerator(uint32_t seed) {
    // pcg64_set_seed(state, seed[0:2], inc[2:4]), each pair (high, low); then srandom_r.
    const std::array<uint64_t, 4> s = seed_sequence_state(seed);
    const u128 initstate = (u128(s[0]) << 64) | s[1];
    const u128 initseq = (u128(s[2]) << 64) | s[3];
    increment_ = (initseq << 1) | 1;
    state_ = 0;
    next_uint64();
    state_ += initstate;
    next_uint64();
}

uint64_t NumpyGenerator::next_uint64() {
    state_ = state_ * kMultiplier + increment_;
    const uint64_t high = uint64_t(state_ >> 64), low = uint64_t(state_);
    const unsigned rot = unsigned(high >> 58);
    const uint64_t x = high ^ low;
    return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t NumpyGenerator::next_uint32() {
    if (has_uint32_) {
        has_uint32_ = false;
        return uint32_;
    }
    const uint64_t next = next_uint64();
    has_uint32_ = true;
    uint32_ = uint32_t(next >> 32);
    return uint32_t(next);
}

std::vector<int32_t> NumpyGenerator::integers_int32(int32_t low, int32_t high, int64_t n) {
    MT_CHECK(low < high && n >= 0, "integers: need low < high and n >= 0, got [", low, ", ", high,
             ") and ", n);
    // Lemire's multiply-shift with rejection over the inclusive range [0, high - 1 - low].
    const uint32_t range = uint32_t(int64_t(high) - 1 - low);
    std::vector<int32_t> out(size_t(n), low);
    if (range == 0) return out;
    const uint32_t excl = range + 1;  // range < 2^32 - 1 here: int32 bounds
    for (auto& v : out) {
        uint64_t m = uint64_t(next_uint32()) * excl;
        uint32_t leftover = uint32_t(m);
        if (leftover < excl) {
            const uint32_t threshold = (UINT32_MAX - range) % excl;
            while (leftover < threshold) {
                m = uint64_t(next_uint32()) * excl;
                leftover = uint32_t(m);
            }
        }
        v = int32_t(int64_t(low) + int64_t(m >> 32));
    }
    return out;
}

}  // namespace mt::data
