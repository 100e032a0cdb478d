// Philox-4x32-10 against Random123's published known-answer vectors (tests/kat_vectors), the
// [0, 1) mapping, and the Dropout functor's counter layout and keep rate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "mt/kernels/rng.h"

namespace {

struct Kat {
    uint32_t ctr[4];
    uint32_t key[2];
    uint32_t expected[4];
};

// Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, result.
constexpr Kat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, MatchesRandom123KnownAnswers) {
    for (const Kat& kat : kKats) {
        mt::k::Philox4 out =
            mt::k::philox4x32_10(mt::k::Philox4{{kat.ctr[0], kat.ctr[1], kat.ctr[2], kat.ctr[3]}},
                                 kat.key[0], kat.key[1]);
        for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], kat.expected[i]) << "word " << i;
    }
}

TEST(Philox, BlockPacksCounterAndSeedAsDocumented) {
    const uint64_t seed = 0x299f31d0a4093822ull, block = 0x85a308d3243f6a88ull;
    mt::k::Philox4 a = mt::k::philox_block(seed, block);
    mt::k::Philox4 b = mt::k::philox4x32_10(mt::k::Philox4{{0x243f6a88, 0x85a308d3, 0, 0}},
                                            0xa4093822, 0x299f31d0);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a.v[i], b.v[i]);
}

TEST(Philox, UniformCoversZeroToJustBelowOne) {
    EXPECT_EQ(mt::k::uniform_from_bits(0u), 0.0f);
    EXPECT_EQ(mt::k::uniform_from_bits(0xffffffffu), 1.0f - 1.0f / 16777216.0f);
    EXPECT_EQ(mt::k::uniform_from_bits(0x80000000u), 0.5f);
}

TEST(DropoutKernel, MaskIsAPureFunctionOfSeedAndCounter) {
    const auto d = mt::k::Dropout::make(0.3f, 1234, 0);
    const auto shifted = mt::k::Dropout::make(0.3f, 1234, 10);
    for (uint64_t i = 0; i < 100; ++i) {
        uint64_t block = i / 4;
        EXPECT_EQ(d.keep(i), d.keep_bits(mt::k::philox_block(1234, block).v[i % 4])) << i;
        EXPECT_EQ(shifted.keep(i), d.keep(i + 10)) << i;
    }
    const auto other_seed = mt::k::Dropout::make(0.3f, 1235, 0);
    int differ = 0;
    for (uint64_t i = 0; i < 1000; ++i) differ += d.keep(i) != other_seed.keep(i);
    EXPECT_GT(differ, 300);  // independent masks differ in 2 p (1 - p) = 42% of places
}

TEST(DropoutKernel, ScaleAndEdgeProbabilities) {
    const auto d = mt::k::Dropout::make(0.25f, 1, 0);
    EXPECT_FLOAT_EQ(d.fwd(3.0f, true), 4.0f);
    EXPECT_EQ(d.fwd(3.0f, false), 0.0f);
    EXPECT_FLOAT_EQ(d.bwd(-1.5f, true), -2.0f);
    const auto none = mt::k::Dropout::make(0.0f, 1, 0);
    const auto all = mt::k::Dropout::make(1.0f, 1, 0);
    for (uint64_t i = 0; i < 1000; ++i) {
        EXPECT_TRUE(none.keep(i));
        EXPECT_FALSE(all.keep(i));
    }
    EXPECT_EQ(none.fwd(2.5f, true), 2.5f);
    EXPECT_EQ(all.fwd(2.5f, false), 0.0f);
}

}  // namespace

// The branchless form the vectorised loops use: the integer keep test and the masked product equal
// keep_bits and fwd for every probability's boundary (bits whose uniform is just below, at and
// above p), the edge probabilities, and signed, infinite and NaN inputs.
TEST(DropoutKernel, MaskedEqualsKeepBitsAndFwd) {
    const float ps[] = {0.0f, 1e-7f, 0.1f, 0.25f, 1.0f / 3.0f, 0.5f, 0.9f, 0.99999994f, 1.0f};
    const float xs[] = {1.5f, -2.25f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f};
    for (float p : ps) {
        const mt::k::Dropout drop = mt::k::Dropout::make(p, 1, 0);
        const uint32_t t = drop.keep_threshold();
        std::vector<uint32_t> words = {0u, 0xFFFFFFFFu, 0x12345678u};
        for (int64_t d = -2; d <= 2; ++d) {  // around the boundary, in the 24 bits that count
            const int64_t b24 = int64_t(t) + d;
            if (b24 >= 0 && b24 < (int64_t(1) << 24)) words.push_back(uint32_t(b24) << 8 | 0x5Au);
        }
        for (uint32_t bits : words)
            for (float x : xs) {
                const float want = drop.fwd(x, drop.keep_bits(bits)), got = drop.masked(x, bits, t);
                uint32_t want_bits, got_bits;
                std::memcpy(&want_bits, &want, 4);
                std::memcpy(&got_bits, &got, 4);
                EXPECT_EQ(got_bits, want_bits)
                    << "p " << p << " bits 0x" << std::hex << bits << " x " << x;
            }
    }
}
