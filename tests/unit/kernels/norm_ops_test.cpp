// CPU LayerNorm and RMSNorm: forward and saved statistics against a naive two-pass double loop,
// every gradient (dx, dweight, dbias) against central differences of the whole op, the += on
// parameter grads, zero-centred gamma (--apply-layernorm-1p), the OpenMP path, shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

using mt::Tensor;
using mt::test::f32;
using mt::test::to_doubles;

struct Case {
    bool zero_centered_gamma;
    int64_t rows_b, rows_t, cols;  // x is (B, T, C)
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << "x (" << c.rows_b << ", " << c.rows_t << ", " << c.cols << ")"
        << (c.zero_centered_gamma ? " 1p" : "");
}

class Norm : public mt::test::BackendTestWith<Case> {};

// Naive reference in double: mean, variance (two-pass), rstd and y for every row.
struct Reference {
    std::vector<double> y, mean, rstd;
};

Reference reference(const Tensor& x, const Tensor& w, const Tensor* b, float eps, bool zc,
                    bool rms) {
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    Reference ref;
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = f32(x) + r * cols;
        double mean = 0, var = 0;
        if (!rms) {
            for (int64_t j = 0; j < cols; ++j) mean += xr[j];
            mean /= cols;
        }
        for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
        var /= cols;
        double rstd = 1.0 / std::sqrt(var + eps);
        for (int64_t j = 0; j < cols; ++j) {
            double gamma = f32(w)[j] + (zc ? 1.0 : 0.0);
            ref.y.push_back((xr[j] - mean) * rstd * gamma + (b ? f32(*b)[j] : 0.0));
        }
        ref.mean.push_back(mean);
        ref.rstd.push_back(rstd);
    }
    return ref;
}

TEST_P(Norm, LayerNormForwardMatchesTwoPassDouble) {
    const Case c = param();
    std::mt19937 rng(20);
    auto x = mt::test::random_tensor({c.rows_b, c.rows_t, c.cols}, rng, -2.0f, 3.0f);
    auto w = mt::test::random_tensor({c.cols}, rng), b = mt::test::random_tensor({c.cols}, rng);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    auto mean = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    auto rstd = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    mt::ops::NormConfig config{1e-5f, c.zero_centered_gamma};
    be().layer_norm_forward(x, w, b, config, y, mean, rstd);
    auto ref = reference(x, w, &b, 1e-5f, c.zero_centered_gamma, false);
    mt::test::expect_close(to_doubles(y), ref.y, 1e-5, 1e-5, "y");
    mt::test::expect_close(to_doubles(mean), ref.mean, 1e-6, 1e-6, "mean");
    mt::test::expect_close(to_doubles(rstd), ref.rstd, 1e-6, 1e-5, "rstd");
}

TEST_P(Norm, LayerNormBackwardMatchesFiniteDifferences) {
    const Case c = param();
    std::mt19937 rng(21);
    auto x = mt::test::random_tensor({c.rows_b, c.rows_t, c.cols}, rng);
    auto w = mt::test::random_tensor({c.cols}, rng, 0.5f, 1.5f);
    auto b = mt::test::random_tensor({c.cols}, rng);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    auto mean = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    auto rstd = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    mt::ops::NormConfig config{1e-5f, c.zero_centered_gamma};
    auto run = [&] { be().layer_norm_forward(x, w, b, config, y, mean, rstd); };
    run();
    auto dy = mt::test::random_tensor(x.shape(), rng);
    auto loss_w = to_doubles(dy);
    auto dx = Tensor::empty(x.shape(), mt::DType::f32);
    // Grads accumulate: start from non-zero values and compare the increment.
    auto dw = mt::test::random_tensor({c.cols}, rng), db = mt::test::random_tensor({c.cols}, rng);
    auto dw0 = to_doubles(dw), db0 = to_doubles(db);
    be().layer_norm_backward(dy, x, w, mean, rstd, config, dx, dw, db);
    mt::test::expect_close(to_doubles(dx), mt::test::numeric_grad(x, run, y, loss_w, 1e-2), 5e-4,
                           3e-3, "dx");
    auto fd_w = mt::test::numeric_grad(w, run, y, loss_w, 1e-2);
    auto fd_b = mt::test::numeric_grad(b, run, y, loss_w, 1e-2);
    for (int64_t j = 0; j < c.cols; ++j) {
        fd_w[j] += dw0[j];
        fd_b[j] += db0[j];
    }
    mt::test::expect_close(to_doubles(dw), fd_w, 5e-4, 3e-3, "dweight");
    mt::test::expect_close(to_doubles(db), fd_b, 5e-4, 3e-3, "dbias");
}

TEST_P(Norm, RmsNormForwardMatchesDouble) {
    const Case c = param();
    std::mt19937 rng(22);
    auto x = mt::test::random_tensor({c.rows_b, c.rows_t, c.cols}, rng, -2.0f, 3.0f);
    auto w = mt::test::random_tensor({c.cols}, rng);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    auto rstd = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    mt::ops::NormConfig config{1e-6f, c.zero_centered_gamma};
    be().rms_norm_forward(x, w, config, y, rstd);
    auto ref = reference(x, w, nullptr, 1e-6f, c.zero_centered_gamma, true);
    mt::test::expect_close(to_doubles(y), ref.y, 1e-5, 1e-5, "y");
    mt::test::expect_close(to_doubles(rstd), ref.rstd, 1e-6, 1e-5, "rstd");
}

TEST_P(Norm, RmsNormBackwardMatchesFiniteDifferences) {
    const Case c = param();
    std::mt19937 rng(23);
    // Away from 0: with C = 1, y = x / sqrt(x^2 + eps) w bends sharply at 0.
    auto x = mt::test::random_away_from_zero({c.rows_b, c.rows_t, c.cols}, rng, 0.2f);
    auto w = mt::test::random_tensor({c.cols}, rng, 0.5f, 1.5f);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    auto rstd = Tensor::empty({c.rows_b, c.rows_t}, mt::DType::f32);
    mt::ops::NormConfig config{1e-5f, c.zero_centered_gamma};
    auto run = [&] { be().rms_norm_forward(x, w, config, y, rstd); };
    run();
    auto dy = mt::test::random_tensor(x.shape(), rng);
    auto loss_w = to_doubles(dy);
    auto dx = Tensor::empty(x.shape(), mt::DType::f32);
    auto dw = mt::test::random_tensor({c.cols}, rng);
    auto dw0 = to_doubles(dw);
    be().rms_norm_backward(dy, x, w, rstd, config, dx, dw);
    mt::test::expect_close(to_doubles(dx), mt::test::numeric_grad(x, run, y, loss_w, 1e-2), 5e-4,
                           3e-3, "dx");
    auto fd_w = mt::test::numeric_grad(w, run, y, loss_w, 1e-2);
    for (int64_t j = 0; j < c.cols; ++j) fd_w[j] += dw0[j];
    mt::test::expect_close(to_doubles(dw), fd_w, 5e-4, 3e-3, "dweight");
}

// C = 1 (degenerate), C < lanes, C not a multiple of the lane count, and C spanning two
// parameter-grad column blocks.
MT_INSTANTIATE_BACKENDS_WITH(Norm,
                             testing::Values(Case{false, 2, 3, 1}, Case{false, 1, 4, 5},
                                             Case{true, 2, 2, 19}, Case{false, 1, 3, 136},
                                             Case{true, 1, 2, 136}),
                             mt::test::printed_name<Case>);

class NormOp : public mt::test::BackendTest {};

TEST_P(NormOp, LargeInputUsesThreadsAndMatchesSmallCalls) {
    std::mt19937 rng(24);
    const int64_t rows = 64, cols = 1024;  // above the parallel threshold
    auto x = mt::test::random_tensor({rows, cols}, rng);
    auto w = mt::test::random_tensor({cols}, rng), b = mt::test::random_tensor({cols}, rng);
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    auto mean = Tensor::empty({rows}, mt::DType::f32), rstd = Tensor::empty({rows}, mt::DType::f32);
    be().layer_norm_forward(x, w, b, {}, y, mean, rstd);
    auto row = x.slice(0, 37, 38).contiguous();
    auto y1 = Tensor::empty({1, cols}, mt::DType::f32);
    auto m1 = Tensor::empty({1}, mt::DType::f32), r1 = Tensor::empty({1}, mt::DType::f32);
    be().layer_norm_forward(row, w, b, {}, y1, m1, r1);
    for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(f32(y1)[j], f32(y)[37 * cols + j]);
    EXPECT_EQ(f32(m1)[0], f32(mean)[37]);
}

// Mamba-2's gated group RMSNorm in f32 (its SiLU exps at SIMD width, above the parallel
// threshold) against the same op in f64: y, rstd, dx, dz and the += on dweight.
TEST_P(NormOp, GatedRmsNormF32FollowsF64) {
    std::mt19937 rng(25);
    const int64_t rows = 64, cols = 768, group = 384;
    auto x = mt::test::random_tensor({rows, cols}, rng, -3.0f, 3.0f);
    auto z = mt::test::random_tensor({rows, cols}, rng, -12.0f, 12.0f);
    auto w = mt::test::random_tensor({cols}, rng), dy = mt::test::random_tensor({rows, cols}, rng);
    auto run = [&](mt::DType dt) {
        auto d = [&](const Tensor& t) { return mt::cast_float(t, dt); };
        auto y = Tensor::empty({rows, cols}, dt), rstd = Tensor::empty({rows, cols / group}, dt);
        be().gated_rms_norm_forward(d(x), d(z), d(w), group, 1e-5, y, rstd);
        auto dx = Tensor::empty({rows, cols}, dt), dz = Tensor::empty({rows, cols}, dt);
        auto dw = d(w);  // accumulated into: starts at w
        be().gated_rms_norm_backward(d(dy), d(x), d(z), d(w), rstd, group, dx, dz, dw);
        auto values = [](const Tensor& t) {
            const Tensor wide = mt::cast_float(t, mt::DType::f64);
            return std::vector<double>(wide.data<double>(), wide.data<double>() + wide.numel());
        };
        return std::vector<std::vector<double>>{values(y), values(rstd), values(dx), values(dz),
                                                values(dw)};
    };
    const auto single = run(mt::DType::f32), wide = run(mt::DType::f64);
    const char* names[] = {"y", "rstd", "dx", "dz", "dweight"};
    for (size_t i = 0; i < single.size(); ++i)
        mt::test::expect_close(single[i], wide[i], 2e-5, 2e-5, names[i]);
}

TEST_P(NormOp, ShapeErrorsNameTheArgument) {
    auto x = Tensor::zeros({2, 3, 8}, mt::DType::f32);
    auto w = Tensor::zeros({8}, mt::DType::f32), b = Tensor::zeros({7}, mt::DType::f32);
    auto y = Tensor::zeros({2, 3, 8}, mt::DType::f32);
    auto mean = Tensor::zeros({6}, mt::DType::f32), rstd = Tensor::zeros({2, 3}, mt::DType::f32);
    mt::ops::NormConfig config;
    EXPECT_NE(mt::test::error_of([&] {
                  be().layer_norm_forward(x, w, b, config, y, mean, rstd);
              }).find("layer_norm_forward: bias must have shape [8], got f32[7]"),
              std::string::npos);
    auto b8 = Tensor::zeros({8}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().layer_norm_forward(x, w, b8, config, y, mean, rstd);
              }).find("layer_norm_forward: mean must have shape [2, 3]"),
              std::string::npos);
    auto w9 = Tensor::zeros({9}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().rms_norm_forward(x, w9, config, y, rstd);
              }).find("rms_norm_forward: weight must have shape [8]"),
              std::string::npos);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(NormOp);
