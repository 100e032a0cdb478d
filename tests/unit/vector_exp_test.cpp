// The vectorised exp (core/src/backends/cpu/vector_exp) in each build this machine can run,
// against libm in double precision over the float range it serves: every 257th float from -104 to
// 89 (the normal results within 2 ulp, subnormal ones within 2 of their ulps), the boundaries,
// infinities and NaN, ragged lengths for the vector tails, and the sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/vector_exp.h"
#include "cpu_builds.h"

namespace {

using ExpFn = float (*)(const float*, float, float*, int64_t);

std::vector<mt::test::CpuBuild<ExpFn>> builds() {
    return mt::test::cpu_builds<ExpFn>(mt::cpu::exp_shifted_portable, mt::cpu::exp_shifted_avx2,
                                       mt::cpu::exp_shifted_avx512);
}

float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// |got - exp(x)| in units of the float spacing at exp(x) (the subnormal spacing below FLT_MIN).
double ulps(float got, float x) {
    const double want = std::exp(double(x));
    const double spacing =
        want < double(std::numeric_limits<float>::min())
            ? double(std::numeric_limits<float>::denorm_min())
            : double(std::nextafter(float(want), std::numeric_limits<float>::infinity())) -
                  double(float(want));
    return std::abs(double(got) - want) / spacing;
}

TEST(VectorExp, EachBuildIsWithinTwoUlpOfLibmOverItsRange) {
    std::vector<float> xs;
    // Positive floats up to 89 and negative ones down to -104, every 257th bit pattern.
    for (uint32_t b = 0; from_bits(b) <= 89.0f; b += 257) xs.push_back(from_bits(b));
    for (uint32_t b = 0x80000000u; from_bits(b) >= -104.0f; b += 257) xs.push_back(from_bits(b));
    for (float edge : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.7228f, -87.33f, -103.97f, -104.0f,
                       89.0f, 0.34657359f, -0.34657359f})
        xs.push_back(edge);
    ASSERT_GT(xs.size(), 5'000'000u);
    for (const auto& build : builds()) {
        SCOPED_TRACE(build.name);
        std::vector<float> ys(xs.size());
        build.fn(xs.data(), 0.0f, ys.data(), int64_t(xs.size()));
        double worst = 0;
        float worst_x = 0;
        for (size_t i = 0; i < xs.size(); ++i) {
            const float x = xs[i];
            if (std::exp(double(x)) > double(std::numeric_limits<float>::max())) {
                EXPECT_EQ(ys[i], std::numeric_limits<float>::infinity()) << x;
                continue;
            }
            const double u = ulps(ys[i], x);
            if (u > worst) worst = u, worst_x = x;
        }
        EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
    }
}

TEST(VectorExp, InfinitiesNanShiftsTailsAndSums) {
    const float inf = std::numeric_limits<float>::infinity();
    for (const auto& build : builds()) {
        SCOPED_TRACE(build.name);
        const std::vector<float> special = {-inf, inf, std::nanf(""), -1000.0f, 1000.0f, 0.0f};
        std::vector<float> out(special.size());
        build.fn(special.data(), 0.0f, out.data(), int64_t(special.size()));
        EXPECT_EQ(out[0], 0.0f);
        EXPECT_EQ(out[1], inf);
        EXPECT_TRUE(std::isnan(out[2]));
        EXPECT_EQ(out[3], 0.0f);
        EXPECT_EQ(out[4], inf);
        EXPECT_EQ(out[5], 1.0f);
        // Every length up to a few vectors: the tails, a shift, and in place.
        for (int64_t n = 0; n <= 40; ++n) {
            std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) x[size_t(i)] = 0.37f * float(i) - 5.0f;
            build.fn(x.data(), -1.5f, y.data(), n);
            for (int64_t i = 0; i < n; ++i)
                EXPECT_LE(ulps(y[size_t(i)], x[size_t(i)] + -1.5f), 2.0) << n << " " << i;
            build.fn(x.data(), -1.5f, x.data(), n);
            EXPECT_EQ(x, y) << n;
        }
    }
    // The dispatched functions: the sum is the elements' within float rounding.
    std::vector<float> x(37);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i) - 3.0f;
    std::vector<float> y(x.size());
    const float returned = mt::cpu::exp_shifted(x.data(), 0.5f, y.data(), int64_t(x.size()));
    double sum = 0;
    for (float v : y) sum += v;
    EXPECT_NEAR(returned, sum, 1e-6 * sum);
    EXPECT_EQ(mt::cpu::sum_exp_shifted(x.data(), 0.5f, int64_t(x.size())), returned);
    EXPECT_EQ(mt::cpu::sum_exp_shifted(x.data(), 0.5f, 0), 0.0f);
}

}  // namespace
