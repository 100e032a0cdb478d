// float -> bfloat16 at SIMD width (core/src/backends/cpu/bf16_narrow) in each build this machine
// can run, against k::float_to_bf16 bit for bit: random floats of every exponent, exact ties
// (odd and even halves), values that round up into the next binade and to infinity, subnormals,
// both zeros and infinities, signalling and quiet NaNs of both signs, ragged lengths for the tails.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/bf16_narrow.h"
#include "cpu_builds.h"
#include "mt/kernels/bf16.h"

namespace {

using NarrowFn = void (*)(const float*, uint16_t*, int64_t);

std::vector<mt::test::CpuBuild<NarrowFn>> builds() {
    return mt::test::cpu_builds<NarrowFn>(mt::cpu::narrow_to_bf16_portable,
                                          mt::cpu::narrow_to_bf16_avx2,
                                          mt::cpu::narrow_to_bf16_avx512);
}

float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

TEST(Bf16Narrow, EachBuildGivesTheScalarRounding) {
    std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F800001u,
                                  0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FBFFFFFu, 0x00000001u,
                                  0x807FFFFFu, 0x7F7FFFFFu, 0x3F808000u, 0x3F818000u, 0x3F80FFFFu,
                                  0x3FFF8000u, 0x3F807FFFu, 0xBF818000u};
    std::mt19937 gen(7);
    for (int i = 0; i < 4000; ++i) bits.push_back(uint32_t(gen()));
    std::vector<float> src;
    for (uint32_t b : bits) src.push_back(from_bits(b));
    for (const auto& build : builds())
        for (int64_t n : {int64_t(0), int64_t(1), int64_t(15), int64_t(16), int64_t(17),
                          int64_t(33), int64_t(src.size())}) {
            std::vector<uint16_t> got(size_t(n) + 1, 0xABCDu);
            build.fn(src.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(got[size_t(i)], mt::k::float_to_bf16(src[size_t(i)]))
                    << build.name << ": float bits 0x" << std::hex << bits[size_t(i)];
            EXPECT_EQ(got.back(), 0xABCDu) << build.name << ": wrote past the end";
        }
}

}  // namespace
