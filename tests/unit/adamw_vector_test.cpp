// The vectorised AdamW (core/src/backends/cpu/adamw_vector) in each build this machine can run,
// against k::AdamW::step element by element: the same bits for both of torch's lerp forms (beta1
// above and below 0.5), weight decay, a gradient scale, steps early and late (bias corrections far
// from and near 1), zero and huge second moments, and ragged lengths for the vector tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/adamw_vector.h"
#include "cpu_builds.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace {

using UpdateFn = void (*)(const mt::k::AdamW&, float*, const float*, float, float*, float*,
                          int64_t);

std::vector<mt::test::CpuBuild<UpdateFn>> builds() {
    return mt::test::cpu_builds<UpdateFn>(mt::cpu::adamw_update_portable,
                                          mt::cpu::adamw_update_avx2, mt::cpu::adamw_update_avx512);
}

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

struct Case {
    double lr, beta1, beta2, eps, weight_decay;
    int64_t step;
    float grad_scale;
};

TEST(AdamWVector, EachBuildGivesTheScalarKernelsBits) {
    const Case cases[] = {{1e-4, 0.9, 0.999, 1e-8, 0.01, 1, 1.0f},
                          {3e-3, 0.9, 0.95, 1e-5, 0.1, 1000, 0.5f},
                          {1e-2, 0.3, 0.98, 1e-6, 0.0, 7, 1.0f / 1024},  // beta1 < 0.5: other lerp
                          {1.0, 0.0, 0.0, 0.0, 0.0, 2, 4.0f}};
    std::mt19937 gen(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& build : builds())
        for (const Case& c : cases)
            for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 1000}) {
                const size_t len = static_cast<size_t>(n);
                std::vector<float> p(len), g(len), m(len), v(len);
                for (int64_t i = 0; i < n; ++i) {
                    p[size_t(i)] = normal(gen);
                    g[size_t(i)] = normal(gen) * (i % 5 == 0 ? 1e4f : 1e-3f);
                    m[size_t(i)] = normal(gen) * 1e-2f;
                    v[size_t(i)] =
                        i % 7 == 0 ? 0.0f : std::abs(normal(gen)) * (i % 3 ? 1e-6f : 1e6f);
                }
                std::vector<float> want_p = p, want_m = m, want_v = v;
                const mt::k::AdamW adam =
                    mt::k::AdamW::at_step(c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.step);
                for (size_t i = 0; i < p.size(); ++i)
                    adam.step(want_p[i], g[i] * c.grad_scale, want_m[i], want_v[i]);
                build.fn(adam, p.data(), g.data(), c.grad_scale, m.data(), v.data(), n);
                for (size_t i = 0; i < p.size(); ++i) {
                    SCOPED_TRACE(build.name + " n=" + std::to_string(n) +
                                 " i=" + std::to_string(i) + " step=" + std::to_string(c.step));
                    EXPECT_EQ(bits(p[i]), bits(want_p[i])) << p[i] << " vs " << want_p[i];
                    EXPECT_EQ(bits(m[i]), bits(want_m[i]));
                    EXPECT_EQ(bits(v[i]), bits(want_v[i]));
                }
            }
}

// The CPU backend's fused mixed-precision step (each piece rounded into the bf16 weights while
// in cache) gives the bits of adamw_step followed by the cast, over threads, pieces and a ragged
// end.
TEST(AdamWVector, RoundedStepEqualsTheStepThenTheCast) {
    auto backend = mt::make_cpu_backend();
    const int64_t n = 3 * (1 << 14) + 1001;
    std::mt19937 gen(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto random = [&](float scale) {
        mt::Tensor t = mt::Tensor::empty({n}, mt::DType::f32);
        for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = normal(gen) * scale;
        return t;
    };
    mt::Tensor p = random(1.0f), g = random(1e-2f), m = random(1e-3f), v = random(1e-3f);
    for (int64_t i = 0; i < n; ++i) v.data<float>()[i] = std::abs(v.data<float>()[i]);
    mt::Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
    mt::Tensor fused = mt::Tensor::empty({n}, mt::DType::bf16), cast = fused.clone();
    const mt::ops::AdamWConfig config{3e-4, 0.9, 0.95, 1e-8, 0.1, 0.5};
    backend->adamw_step_rounded(p, g, m, v, config, 3, fused);
    backend->adamw_step(p2, g, m2, v2, config, 3);
    backend->cast(p2, cast);
    for (const auto& [got, want] : {std::pair{&p, &p2}, {&m, &m2}, {&v, &v2}})
        EXPECT_EQ(std::memcmp(got->raw_data(), want->raw_data(), size_t(n) * 4), 0);
    EXPECT_EQ(std::memcmp(fused.raw_data(), cast.raw_data(), size_t(n) * 2), 0);
}

}  // namespace
