// CPU dropout: values are 0 or x / (1 - p) by the kernel's mask, the mask is a pure function
// of (seed, offset + i) (replays, shifts with the offset, differs across seeds), the keep rate
// over 1e6 elements, backward uses the forward's mask, and p = 0 / p = 1. The uniform scaling
// of input jitter draws from the same counters: factors in [low, high) with the uniform's mean.
#include <gtest/gtest.h>

#include <cmath>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "mt/kernels/rng.h"
#include "test_support.h"

namespace {

using mt::Tensor;
using mt::test::f32;

class DropoutOp : public mt::test::BackendTest {};

TEST_P(DropoutOp, ForwardAppliesTheKernelMask) {
    std::mt19937 rng(50);
    auto x = mt::test::random_away_from_zero({3, 7, 5}, rng, 0.1f);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    const float p = 0.3f;
    be().dropout_forward(x, p, 99, 6, y);
    const auto drop = mt::k::Dropout::make(p, 99, 6);
    for (int64_t i = 0; i < x.numel(); ++i) {
        float expected = drop.keep(uint64_t(i)) ? f32(x)[i] / (1.0f - p) : 0.0f;
        EXPECT_FLOAT_EQ(f32(y)[i], expected) << i;
    }
}

TEST_P(DropoutOp, MaskReplaysAndShiftsWithOffset) {
    const int64_t n = 1003;  // not a multiple of 4, with offsets not aligned to Philox blocks
    auto ones = Tensor::empty({n}, mt::DType::f32);
    for (int64_t i = 0; i < n; ++i) f32(ones)[i] = 1.0f;
    auto a = Tensor::empty({n}, mt::DType::f32), b = Tensor::empty({n}, mt::DType::f32);
    be().dropout_forward(ones, 0.5f, 7, 0, a);
    be().dropout_forward(ones, 0.5f, 7, 0, b);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(f32(a)[i], f32(b)[i]);
    // The second half of a call with offset 0 equals a call on that half with offset 501.
    auto half = ones.slice(0, 501, n).contiguous();
    auto c = Tensor::empty(half.shape(), mt::DType::f32);
    be().dropout_forward(half, 0.5f, 7, 501, c);
    for (int64_t i = 0; i < half.numel(); ++i) ASSERT_EQ(f32(c)[i], f32(a)[501 + i]) << i;
    be().dropout_forward(ones, 0.5f, 8, 0, b);
    int differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += f32(a)[i] != f32(b)[i];
    EXPECT_GT(differ, n / 4);
}

TEST_P(DropoutOp, KeepFractionIsOneMinusP) {
    const int64_t n = 1000000;
    auto ones = Tensor::empty({n}, mt::DType::f32);
    for (int64_t i = 0; i < n; ++i) f32(ones)[i] = 1.0f;
    auto y = Tensor::empty({n}, mt::DType::f32);
    for (float p : {0.1f, 0.5f}) {
        be().dropout_forward(ones, p, 2024, 12345, y);
        int64_t kept = 0;
        double mean = 0;
        for (int64_t i = 0; i < n; ++i) {
            kept += f32(y)[i] != 0.0f;
            mean += f32(y)[i];
        }
        const double sigma = std::sqrt(p * (1 - p) / n);  // of the keep fraction
        EXPECT_NEAR(double(kept) / n, 1.0 - p, 5 * sigma) << p;
        EXPECT_NEAR(mean / n, 1.0, 5 * sigma / (1 - p)) << p;  // inverted dropout keeps E[y] = x
    }
}

TEST_P(DropoutOp, BackwardUsesTheForwardMask) {
    std::mt19937 rng(51);
    auto x = mt::test::random_away_from_zero({4, 33}, rng, 0.1f);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    be().dropout_forward(x, 0.2f, 5, 77, y);
    auto dy = mt::test::random_tensor(x.shape(), rng);
    auto dx = Tensor::empty(x.shape(), mt::DType::f32);
    be().dropout_backward(dy, 0.2f, 5, 77, dx);
    for (int64_t i = 0; i < x.numel(); ++i) {
        // y = x * s * keep, so dL/dx = dy * (y / x) exactly up to rounding.
        EXPECT_NEAR(f32(dx)[i], f32(dy)[i] * (f32(y)[i] / f32(x)[i]), 1e-6) << i;
    }
    auto fd = mt::test::numeric_grad(
        x, [&] { be().dropout_forward(x, 0.2f, 5, 77, y); }, y, mt::test::to_doubles(dy), 1e-2);
    mt::test::expect_close(mt::test::to_doubles(dx), fd, 1e-4, 1e-3, "dx");
}

TEST_P(DropoutOp, ZeroAndOneProbabilities) {
    std::mt19937 rng(52);
    auto x = mt::test::random_tensor({100}, rng);
    auto y = Tensor::empty({100}, mt::DType::f32);
    be().dropout_forward(x, 0.0f, 1, 0, y);
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(f32(y)[i], f32(x)[i]);
    be().dropout_forward(x, 1.0f, 1, 0, y);
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(f32(y)[i], 0.0f);
    EXPECT_NE(mt::test::error_of([&] {
                  be().dropout_forward(x, 1.5f, 1, 0, y);
              }).find("drop probability must be in [0, 1], got 1.5"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] {
                  be().dropout_forward(x, 0.1f, 1, ~uint64_t(0) - 10, y);
              }).find("overflows the 64-bit counter"),
              std::string::npos);
}

TEST_P(DropoutOp, UniformScaleDrawsKernelFactorsInRange) {
    const int64_t n = 100003;
    std::mt19937 rng(53);
    auto x = mt::test::random_tensor({n}, rng);
    auto y = Tensor::empty({n}, mt::DType::f32), again = Tensor::empty({n}, mt::DType::f32);
    const float low = 0.9f, high = 1.1f;
    be().uniform_scale(x, low, high, 5, 3, y);
    be().uniform_scale(x, low, high, 5, 3, again);  // a replay: the same factors
    const mt::k::UniformScale noise{low, high};
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t j = 3 + uint64_t(i);
        const float factor = noise.factor_bits(mt::k::philox_block(5, j >> 2).v[j & 3]);
        ASSERT_GE(factor, low);
        ASSERT_LT(factor, high);
        ASSERT_EQ(f32(y)[i], f32(x)[i] * factor) << i;
        ASSERT_EQ(f32(again)[i], f32(y)[i]) << i;
        sum += factor;
    }
    EXPECT_NEAR(sum / double(n), 1.0, 1e-3);  // U(0.9, 1.1): sd 0.058 / sqrt(n)
    EXPECT_NE(mt::test::error_of([&] {
                  be().uniform_scale(x, 1.1f, 0.9f, 5, 3, y);
              }).find("uniform_scale: low 1.1 above high 0.9"),
              std::string::npos);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(DropoutOp);
