// AdamW: the kernel against a hand-written double-precision recurrence in the textbook form
// (p -= lr (m_hat / (sqrt(v_hat) + eps) + wd p)), and the CPU op against torch.optim.AdamW
// (tests/fixtures/kernels/adamw_torch.txt, made by make_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "mt/kernels/adam.h"
#include "test_support.h"

namespace {

TEST(AdamWKernel, MatchesTextbookRecurrence) {
    const double lr = 3e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    std::mt19937 rng(5);
    std::normal_distribution<double> grad(0.0, 0.5);
    for (double p0 : {0.8, -0.3, 1e-3}) {
        double p = p0, m = 0, v = 0;
        float pf = float(p0), mf = 0, vf = 0;
        for (int t = 1; t <= 50; ++t) {
            double g = grad(rng);
            m = b1 * m + (1 - b1) * g;
            v = b2 * v + (1 - b2) * g * g;
            double m_hat = m / (1 - std::pow(b1, t)), v_hat = v / (1 - std::pow(b2, t));
            p -= lr * (m_hat / (std::sqrt(v_hat) + eps) + wd * p);
            mt::k::AdamW::at_step(lr, b1, b2, eps, wd, t).step(pf, float(g), mf, vf);
            ASSERT_NEAR(mf, m, 1e-6 * (1 + std::fabs(m))) << "t=" << t;
            ASSERT_NEAR(vf, v, 1e-6 * v + 1e-12) << "t=" << t;
            ASSERT_NEAR(pf, p, 2e-6 * (1 + std::fabs(p))) << "t=" << t;
        }
    }
}

TEST(AdamWKernel, ZeroGradientOnlyDecays) {
    float p = 2.0f, m = 0, v = 0;
    mt::k::AdamW::at_step(0.1, 0.9, 0.999, 1e-8, 0.5, 1).step(p, 0.0f, m, v);
    EXPECT_FLOAT_EQ(p, 2.0f * (1 - 0.1f * 0.5f));
    EXPECT_EQ(m, 0.0f);
    EXPECT_EQ(v, 0.0f);
}

// Reads whitespace-separated numbers following the line "name" in the fixture.
std::vector<double> fixture_values(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line == name) {
            std::getline(in, line);
            std::istringstream values(line);
            std::vector<double> out;  // float32 values: 9 digits round-trip exactly
            for (double x; values >> x;) out.push_back(double(float(x)));
            return out;
        }
    ADD_FAILURE() << "fixture has no section " << name;
    return {};
}

mt::Tensor tensor_of(const std::vector<double>& v) {
    auto t = mt::Tensor::empty({int64_t(v.size())}, mt::DType::f32);
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = float(v[i]);
    return t;
}

class AdamWOp : public mt::test::BackendTest {};

TEST_P(AdamWOp, MatchesTorchAdamW) {
    const std::string text =
        mt::test::read_file(mt::test::fixtures_dir() / "kernels" / "adamw_torch.txt");
    auto hyper = fixture_values(text, "hyper");  // lr beta1 beta2 eps weight_decay steps
    ASSERT_EQ(hyper.size(), 6u);
    mt::ops::AdamWConfig config{hyper[0], hyper[1], hyper[2], hyper[3], hyper[4]};
    const int steps = int(hyper[5]);
    auto param = tensor_of(fixture_values(text, "param0"));
    auto m = mt::Tensor::zeros(param.shape(), mt::DType::f32);
    auto v = mt::Tensor::zeros(param.shape(), mt::DType::f32);
    for (int t = 1; t <= steps; ++t) {
        auto grad = tensor_of(fixture_values(text, "grad" + std::to_string(t)));
        be().adamw_step(param, grad, m, v, config, t);
        mt::test::expect_close(mt::test::to_doubles(param),
                               fixture_values(text, "param" + std::to_string(t)), 0, 3e-7,
                               ("param after step " + std::to_string(t)).c_str());
    }
    mt::test::expect_close(mt::test::to_doubles(m), fixture_values(text, "exp_avg"), 1e-8, 1e-6,
                           "exp_avg");
    mt::test::expect_close(mt::test::to_doubles(v), fixture_values(text, "exp_avg_sq"), 1e-10, 1e-6,
                           "exp_avg_sq");
}

TEST_P(AdamWOp, ParallelPathMatchesKernelAndChecksShapes) {
    std::mt19937 rng(6);
    const int64_t n = 1 << 16;
    auto param = mt::test::random_tensor({n}, rng), grad = mt::test::random_tensor({n}, rng);
    auto m = mt::Tensor::zeros({n}, mt::DType::f32), v = mt::Tensor::zeros({n}, mt::DType::f32);
    auto expected = param.clone();
    mt::ops::AdamWConfig config{1e-3, 0.9, 0.999, 1e-8, 0.01};
    be().adamw_step(param, grad, m, v, config, 1);
    auto step = mt::k::AdamW::at_step(1e-3, 0.9, 0.999, 1e-8, 0.01, 1);
    for (int64_t i = 0; i < n; ++i) {
        float p = expected.data<float>()[i], mi = 0, vi = 0;
        step.step(p, grad.data<float>()[i], mi, vi);
        ASSERT_EQ(param.data<float>()[i], p) << i;
    }
    auto bad = mt::Tensor::zeros({n + 1}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().adamw_step(param, bad, m, v, config, 2);
              }).find("adamw_step: grad must have shape [65536]"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] {
                  be().adamw_step(param, grad, m, v, config, 0);
              }).find("step counts from 1"),
              std::string::npos);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(AdamWOp);
