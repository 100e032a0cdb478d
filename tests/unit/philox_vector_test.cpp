// Philox blocks at SIMD width (core/src/backends/cpu/philox_vector) in each build this machine
// can run, against k::philox_block word for word: seeds with both key halves set, first blocks
// whose low word wraps inside a vector (the carry into the high word), ragged block counts for the
// vector tails; and counter_words's rows starting at every word of a block.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/philox_vector.h"
#include "cpu_builds.h"
#include "mt/kernels/rng.h"

namespace {

using WordsFn = void (*)(uint64_t, uint64_t, int64_t, uint32_t*);

std::vector<mt::test::CpuBuild<WordsFn>> builds() {
    return mt::test::cpu_builds<WordsFn>(mt::cpu::philox_words_portable, mt::cpu::philox_words_avx2,
                                         mt::cpu::philox_words_avx512);
}

TEST(PhiloxVector, EachBuildGivesPhiloxBlocksWords) {
    const uint64_t seeds[] = {0, 1234, 0x9E3779B97F4A7C15ull};
    const uint64_t firsts[] = {0, 5, 0xFFFFFFF8ull, 0x1FFFFFFFDull, 0xFFFFFFFFFFFFFF00ull};
    for (const auto& build : builds())
        for (uint64_t seed : seeds)
            for (uint64_t first : firsts)
                for (int64_t blocks : {0, 1, 3, 7, 8, 9, 15, 16, 17, 40}) {
                    std::vector<uint32_t> got(size_t(4 * blocks) + 1, 0xDEADBEEFu);
                    build.fn(seed, first, blocks, got.data());
                    for (int64_t b = 0; b < blocks; ++b) {
                        const mt::k::Philox4 want = mt::k::philox_block(seed, first + uint64_t(b));
                        for (int w = 0; w < 4; ++w)
                            ASSERT_EQ(got[size_t(4 * b + w)], want.v[w])
                                << build.name << " seed " << seed << " block " << first + b
                                << " word " << w;
                    }
                    EXPECT_EQ(got.back(), 0xDEADBEEFu) << build.name << ": wrote past the end";
                }
}

TEST(PhiloxVector, CounterWordsAreEachCountersWord) {
    std::vector<uint32_t> scratch;
    for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 1001ull, 0x3FFFFFFFEull})
        for (int64_t n : {1, 2, 5, 64, 257}) {
            const uint32_t* words = mt::cpu::counter_words(42, first, n, scratch);
            for (int64_t i = 0; i < n; ++i) {
                const uint64_t j = first + uint64_t(i);
                ASSERT_EQ(words[i], mt::k::philox_block(42, j >> 2).v[j & 3])
                    << "counter " << j << " of a row from " << first;
            }
        }
}

}  // namespace
