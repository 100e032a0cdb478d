// Decoding attention's vector kernels (core/src/backends/cpu/key_value_rows) in each build this
// machine can run, against double-precision loops: key counts around the 8- and 16-key blocks,
// head sizes that are and are not multiples of the vector width, rows strided as a cache's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/key_value_rows.h"
#include "cpu_builds.h"

namespace {

using KeyDots = void (*)(const float*, const float*, int64_t, int64_t, int64_t, float, float*);
using WeightedValues = void (*)(const float*, const float*, int64_t, int64_t, int64_t, float*);

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

TEST(KeyValueRows, EachBuildMatchesDoubleLoops) {
    const auto dots = mt::test::cpu_builds<KeyDots>(
        mt::cpu::key_dots_portable, mt::cpu::key_dots_avx2, mt::cpu::key_dots_avx512);
    const auto sums = mt::test::cpu_builds<WeightedValues>(mt::cpu::weighted_values_portable,
                                                           mt::cpu::weighted_values_avx2,
                                                           mt::cpu::weighted_values_avx512);
    std::mt19937 rng(5);
    for (int64_t hd : {8, 12, 16, 64, 80})
        for (int64_t keys : {1, 7, 8, 15, 16, 17, 40}) {
            const int64_t stride = 3 * hd + 4;  // other heads' rows between a head's keys
            const std::vector<float> q = random_floats(size_t(hd), rng);
            const std::vector<float> k = random_floats(size_t(keys * stride), rng);
            const std::vector<float> w = random_floats(size_t(keys), rng);
            const std::vector<float> o0 = random_floats(size_t(hd), rng);
            for (const auto& build : dots) {
                std::vector<float> p(size_t(keys), NAN);
                build.fn(q.data(), k.data(), stride, keys, hd, 0.125f, p.data());
                for (int64_t s = 0; s < keys; ++s) {
                    double want = 0;
                    for (int64_t i = 0; i < hd; ++i) want += double(q[i]) * k[s * stride + i];
                    EXPECT_NEAR(p[size_t(s)], 0.125 * want, 1e-5 * (1 + std::abs(want)))
                        << build.name << " hd " << hd << " keys " << keys << " key " << s;
                }
            }
            for (const auto& build : sums) {
                std::vector<float> o = o0;
                build.fn(w.data(), k.data(), stride, keys, hd, o.data());
                for (int64_t i = 0; i < hd; ++i) {
                    double want = o0[size_t(i)];
                    for (int64_t s = 0; s < keys; ++s) want += double(w[s]) * k[s * stride + i];
                    EXPECT_NEAR(o[size_t(i)], want, 1e-5 * (1 + std::abs(want)))
                        << build.name << " hd " << hd << " keys " << keys << " at " << i;
                }
            }
        }
}

}  // namespace
