// Helpers for the kernel and CPU-op tests.
#include "kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mt::test {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    Tensor t = Tensor::empty(shape, DType::f32);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    return t;
}

Tensor random_away_from_zero(const Shape& shape, std::mt19937& rng, float gap) {
    Tensor t = random_tensor(shape, rng);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::copysign(gap + std::fabs(p[i]), p[i]);
    return t;
}

std::vector<double> to_doubles(const Tensor& t) {
    const float* p = t.data<float>();
    return std::vector<double>(p, p + t.numel());
}

float* f32(const Tensor& t) {
    return t.data<float>();
}

double weighted_sum(const Tensor& y, const std::vector<double>& w) {
    const float* p = y.data<float>();
    double s = 0;
    for (int64_t k = 0; k < y.numel(); ++k) s += w[k] * double(p[k]);
    return s;
}

std::vector<double> numeric_grad(Tensor& x, const std::function<void()>& run, const Tensor& y,
                                 const std::vector<double>& w, double h) {
    float* p = x.data<float>();
    std::vector<double> grad(x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) {
        const float saved = p[i];
        p[i] = float(saved + h);
        const double step_up = double(p[i]) - saved;  // the step actually taken in float
        run();
        double up = weighted_sum(y, w);
        p[i] = float(saved - h);
        const double step_down = saved - double(p[i]);
        run();
        double down = weighted_sum(y, w);
        p[i] = saved;
        grad[i] = (up - down) / (step_up + step_down);
    }
    run();
    return grad;
}

void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double atol, double rtol, const char* what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    int reported = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
        double tol = atol + rtol * std::fabs(expected[i]);
        if (!(std::fabs(actual[i] - expected[i]) <= tol) && reported++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs expected "
                          << expected[i] << " (tolerance " << tol << ")";
    }
}

}  // namespace mt::test
