// NumpyRandomState against numpy.random.RandomState draws and shuffles (expected.txt "rng.*"),
// NumpyGenerator against numpy.random.default_rng's (expected.txt "pcg64.*").
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "expected_values.h"
#include "mt/data/numpy_generator.h"
#include "mt/data/numpy_random.h"

namespace {

using mt::data::NumpyRandomState;
using mt::test::ExpectedValues;

const uint32_t kSeeds[] = {0, 1, 42, 1234, 4294967295u};

std::string hash_of(const std::vector<int64_t>& v) {
    return mt::test::md5_of(v.data(), v.size() * sizeof(int64_t));
}

TEST(NumpyRandomState, RawDrawsMatchNumpy) {
    for (uint32_t seed : kSeeds) {
        auto expected = ExpectedValues::get().words("rng." + std::to_string(seed) + ".raw");
        NumpyRandomState rng(seed);
        for (const auto& word : expected)
            EXPECT_EQ(std::to_string(rng.next_uint32()), word) << seed;
    }
}

TEST(NumpyRandomState, ShuffleMatchesNumpy) {
    for (uint32_t seed : kSeeds) {
        for (int64_t n : {1, 2, 10, 1000, 100003}) {
            std::string key = "rng." + std::to_string(seed) + ".shuffle" + std::to_string(n);
            auto expected = ExpectedValues::get().words(key);
            ASSERT_GE(expected.size(), 2u) << key;
            std::vector<int64_t> a(n);
            std::iota(a.begin(), a.end(), 0);
            NumpyRandomState rng(seed);
            rng.shuffle(std::span<int64_t>(a));
            EXPECT_EQ(hash_of(a), expected[0]) << key;
            for (size_t i = 1; i < expected.size(); ++i) {
                EXPECT_EQ(std::to_string(a[i - 1]), expected[i]) << key << " position " << i - 1;
            }
        }
    }
}

TEST(NumpyRandomState, SuccessiveShufflesContinueTheStream) {
    for (uint32_t seed : kSeeds) {
        auto expected = ExpectedValues::get().words("rng." + std::to_string(seed) + ".chained");
        ASSERT_EQ(expected.size(), 2u);
        NumpyRandomState rng(seed);
        std::vector<uint32_t> a(500);
        std::vector<int32_t> b(77);
        std::iota(a.begin(), a.end(), 0u);
        std::iota(b.begin(), b.end(), 0);
        rng.shuffle(std::span<uint32_t>(a));
        rng.shuffle(std::span<int32_t>(b));
        EXPECT_EQ(hash_of(std::vector<int64_t>(a.begin(), a.end())), expected[0]) << seed;
        EXPECT_EQ(hash_of(std::vector<int64_t>(b.begin(), b.end())), expected[1]) << seed;
    }
}

TEST(NumpyRandomState, RandomIntervalStaysInRange) {
    NumpyRandomState rng(7);
    EXPECT_EQ(rng.random_interval(0), 0u);
    for (uint64_t max : {1ull, 5ull, 0xffffffffull, 0x100000000ull, 0x123456789abcull}) {
        for (int i = 0; i < 100; ++i) EXPECT_LE(rng.random_interval(max), max);
    }
}

TEST(NumpyRandomState, Uint64IsHighWordFirst) {
    NumpyRandomState a(99), b(99);
    uint64_t high = a.next_uint32();
    uint64_t low = a.next_uint32();
    EXPECT_EQ(b.next_uint64(), (high << 32) | low);
}

// default_rng(seed): SeedSequence-seeded PCG64 raw draws, and integers(low, high, int32) by
// Lemire's rejection (a range of 2^31 - 1 rejects often).
TEST(NumpyGenerator, DrawsMatchDefaultRng) {
    for (uint32_t seed : {0u, 1u, 12345u, 4294967295u}) {
        const std::string key = "pcg64." + std::to_string(seed);
        mt::data::NumpyGenerator raw(seed);
        for (const auto& word : ExpectedValues::get().words(key + ".raw"))
            EXPECT_EQ(std::to_string(raw.next_uint64()), word) << seed;
        for (auto [low, high] : {std::pair{1, 4096}, {-7, 5}, {0, 2147483647}}) {
            const std::string what =
                key + ".int32_" + std::to_string(low) + "_" + std::to_string(high);
            const std::vector<int32_t> a =
                mt::data::NumpyGenerator(seed).integers_int32(low, high, 1000);
            auto expected = ExpectedValues::get().words(what);
            ASSERT_GE(expected.size(), 2u) << what;
            EXPECT_EQ(mt::test::md5_of(a.data(), a.size() * sizeof(int32_t)), expected[0]) << what;
            for (size_t i = 1; i < expected.size(); ++i)
                EXPECT_EQ(std::to_string(a[i - 1]), expected[i]) << what << "[" << i - 1 << "]";
        }
    }
}

}  // namespace
