// Narrowing f32 to f16 / bf16 as torch's .half() / .bfloat16() do: every half and bfloat16 value
// survives the round trip, and a float halfway between two neighbours goes to the even one;
// overflow gives infinity, NaN stays NaN; cast_float over tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mt/dtype.h"
#include "mt/tensor.h"

namespace {

float bits_to_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

TEST(DTypeCast, EveryHalfRoundTripsAndTiesGoToEven) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = mt::half_to_float(uint16_t(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(mt::half_to_float(mt::float_to_half(f)))) << h;
            continue;
        }
        ASSERT_EQ(mt::float_to_half(f), h) << "half " << h;
        // The midpoint to the next half up (same sign, finite): ties to the even one.
        if ((h & 0x7FFF) >= 0x7BFF) continue;
        const float next = mt::half_to_float(uint16_t(h + 1));
        const float mid = (f + next) / 2;  // exact in float
        const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
        ASSERT_EQ(mt::float_to_half(mid), even) << "midpoint above half " << h;
    }
    EXPECT_EQ(mt::float_to_half(70000.0f), 0x7C00) << "beyond 65504: infinity";
    EXPECT_EQ(mt::float_to_half(-1e-9f), 0x8000) << "below the smallest subnormal: -0";
}

TEST(DTypeCast, EveryBfloat16RoundTripsAndTiesGoToEven) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = mt::bfloat16_to_float(uint16_t(b));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(mt::bfloat16_to_float(mt::float_to_bfloat16(f)))) << b;
            continue;
        }
        ASSERT_EQ(mt::float_to_bfloat16(f), b) << "bfloat16 " << b;
        if ((b & 0x7FFF) >= 0x7F7F) continue;
        // Halfway to the next: the float with the 16 low bits 0x8000.
        const float mid = bits_to_float((b << 16) | 0x8000u);
        const uint16_t even = (b & 1) ? uint16_t(b + 1) : uint16_t(b);
        ASSERT_EQ(mt::float_to_bfloat16(mid), even) << "midpoint above bfloat16 " << b;
    }
    EXPECT_EQ(mt::float_to_bfloat16(std::numeric_limits<float>::max()), 0x7F80) << "infinity";
}

TEST(DTypeCast, CastFloatTensors) {
    mt::Tensor t = mt::Tensor::empty({3}, mt::DType::f32);
    t.data<float>()[0] = 1.0f;
    t.data<float>()[1] = 1.00390625f;  // 1 + 2^-8: a bfloat16 tie, to even (1.0)
    t.data<float>()[2] = -2.5f;
    const mt::Tensor b = mt::cast_float(t, mt::DType::bf16);
    const auto* bits = static_cast<const uint16_t*>(b.raw_data());
    EXPECT_EQ(bits[0], 0x3F80);
    EXPECT_EQ(bits[1], 0x3F80);
    const mt::Tensor back = mt::cast_float(b, mt::DType::f32);
    EXPECT_EQ(back.data<float>()[2], -2.5f);
    EXPECT_THROW(mt::cast_float(t, mt::DType::i32), std::exception);
}

}  // namespace
