// Helpers for the mt::nn tests.
#include "nn_test_util.h"

#include "test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace mt::test {

namespace {

double weighted_sum(const Tensor& y, const std::vector<double>& w) {
    Tensor c = y.contiguous();
    double s = 0;
    for (int64_t k = 0; k < c.numel(); ++k) s += w[k] * element(c, k);
    return s;
}

}  // namespace

std::map<std::string, Stored> load_stored_tensors(const std::filesystem::path& file) {
    std::ifstream in(file);
    EXPECT_TRUE(in) << file;
    std::map<std::string, Stored> out;
    std::string name;
    int64_t ndim;
    while (in >> name >> ndim) {
        Stored s;
        int64_t n = 1;
        for (int64_t d = 0; d < ndim; ++d) {
            s.shape.push_back(0);
            in >> s.shape.back();
            n *= s.shape.back();
        }
        s.values.resize(size_t(n));
        for (double& v : s.values) in >> v;
        out[name] = std::move(s);
    }
    return out;
}

Tensor random_like(const Shape& shape, DType dtype, std::mt19937& rng, double lo, double hi) {
    Tensor t = Tensor::empty(shape, dtype);
    fill_random(t, rng, lo, hi);
    return t;
}

void fill_random(Tensor& t, std::mt19937& rng, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, dist(rng));
}

Tensor random_ids(int64_t batch, int64_t seq, int64_t vocab, std::mt19937& rng) {
    std::uniform_int_distribution<int64_t> dist(0, vocab - 1);
    Tensor t = Tensor::empty({batch, seq}, DType::i64);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = dist(rng);
    return t;
}

std::vector<double> values(const Tensor& t) {
    Tensor c = t.contiguous();
    std::vector<double> v(c.numel());
    for (int64_t i = 0; i < c.numel(); ++i) v[i] = element(c, i);
    return v;
}

void zero_grads(const std::vector<nn::Parameter*>& params) {
    for (nn::Parameter* p : params)
        for (int64_t i = 0; i < p->grad.numel(); ++i) set_element(p->grad, i, 0.0);
}

std::vector<double> random_weights(const Tensor& y, std::mt19937& rng) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> w(y.numel());
    for (double& x : w) x = dist(rng);
    return w;
}

Tensor weights_tensor(const Tensor& y, const std::vector<double>& w) {
    Tensor t = Tensor::empty(y.shape(), y.dtype());
    for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, w[i]);
    return t;
}

std::vector<GradTarget> parameter_targets(const std::vector<nn::Parameter*>& params) {
    std::vector<GradTarget> out;
    for (nn::Parameter* p : params) out.push_back({p->name, p->value, p->grad});
    return out;
}

void expect_grads_match(const std::function<Tensor()>& forward, const std::vector<double>& w,
                        const std::vector<GradTarget>& targets, double h, double atol,
                        double rtol) {
    for (const GradTarget& target : targets) {
        Tensor value = target.value;
        ASSERT_TRUE(value.is_contiguous()) << target.name;
        int reported = 0;
        for (int64_t i = 0; i < value.numel(); ++i) {
            const double saved = element(value, i);
            set_element(value, i, saved + h);
            const double up = weighted_sum(forward(), w);
            set_element(value, i, saved - h);
            const double down = weighted_sum(forward(), w);
            set_element(value, i, saved);
            const double numeric = (up - down) / (2 * h);
            const double analytic = element(target.grad, i);
            const double tol = atol + rtol * std::fabs(numeric);
            if (!(std::fabs(analytic - numeric) <= tol) && reported++ < 5)
                ADD_FAILURE() << target.name << "[" << i << "]: analytic " << analytic
                              << " vs numeric " << numeric << " (tolerance " << tol << ")";
        }
    }
}

}  // namespace mt::test
