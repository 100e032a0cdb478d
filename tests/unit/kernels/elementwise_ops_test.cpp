// CPU elementwise ops: every UnaryOp against a double oracle and its backward against central
// differences of the whole op; SwiGLU on the split fc1 layout; the OpenMP path; shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

using mt::ops::UnaryOp;

double oracle(UnaryOp op, double x) {
    switch (op) {
        case UnaryOp::gelu: {
            double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
            return 0.5 * x * (1.0 + std::tanh(u));
        }
        case UnaryOp::gelu_erf:
            return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
        case UnaryOp::silu:
            return x / (1.0 + std::exp(-x));
        case UnaryOp::quick_gelu:
            return x / (1.0 + std::exp(-1.702 * x));
        case UnaryOp::relu:
            return x > 0 ? x : 0.0;
        case UnaryOp::squared_relu:
            return x > 0 ? x * x : 0.0;
        case UnaryOp::tanh:
            return std::tanh(x);
        case UnaryOp::exp:
            return std::exp(x);
        case UnaryOp::log:
            return std::log(x);
    }
    return NAN;
}

class Unary : public mt::test::BackendTestWith<UnaryOp> {};

TEST_P(Unary, ForwardMatchesOracle) {
    std::mt19937 rng(10);
    auto x = mt::test::random_tensor({3, 5, 7}, rng, -4.0f, 4.0f);
    auto y = mt::Tensor::empty(x.shape(), mt::DType::f32);
    be().unary_forward(param(), x, y);
    std::vector<double> expected;
    for (double v : mt::test::to_doubles(x)) expected.push_back(oracle(param(), v));
    mt::test::expect_close(mt::test::to_doubles(y), expected, 1e-6, 1e-6, "y");
}

TEST_P(Unary, BackwardMatchesFiniteDifferences) {
    std::mt19937 rng(11);
    auto x = mt::test::random_away_from_zero({4, 6}, rng, 0.05f);  // off the ReLU kink
    auto y = mt::Tensor::empty(x.shape(), mt::DType::f32);
    auto dy = mt::test::random_tensor(x.shape(), rng);  // dL/dy for L = sum(w * y)
    auto w = mt::test::to_doubles(dy);
    auto dx = mt::Tensor::empty(x.shape(), mt::DType::f32);
    be().unary_backward(param(), x, dy, dx);
    auto fd = mt::test::numeric_grad(
        x, [&] { be().unary_forward(param(), x, y); }, y, w, 1e-2);
    mt::test::expect_close(mt::test::to_doubles(dx), fd, 2e-4, 2e-3, "dx");
}

TEST_P(Unary, ParallelAndInPlacePathsAgree) {
    std::mt19937 rng(12);
    auto x = mt::test::random_tensor({1 << 16}, rng, -3.0f, 3.0f);
    auto y = mt::Tensor::empty(x.shape(), mt::DType::f32);
    be().unary_forward(param(), x, y);
    auto small = mt::Tensor::empty({16}, mt::DType::f32);
    for (int64_t start : {int64_t(0), int64_t(40000), (int64_t(1) << 16) - 16}) {
        auto xs = x.slice(0, start, start + 16).contiguous();
        be().unary_forward(param(), xs, small);
        for (int64_t i = 0; i < 16; ++i)
            ASSERT_EQ(mt::test::f32(small)[i], mt::test::f32(y)[start + i]) << start + i;
    }
    be().unary_forward(param(), x, x);  // in place
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(mt::test::f32(x)[i], mt::test::f32(y)[i]);
}

MT_INSTANTIATE_BACKENDS_WITH(Unary,
                             testing::Values(UnaryOp::gelu, UnaryOp::gelu_erf, UnaryOp::silu,
                                             UnaryOp::quick_gelu, UnaryOp::relu,
                                             UnaryOp::squared_relu, UnaryOp::tanh),
                             [](UnaryOp op) { return std::string(mt::ops::unary_op_name(op)); });

class Glu : public mt::test::BackendTest {};

TEST_P(Glu, SwigluForwardSplitsGateThenUp) {
    std::mt19937 rng(13);
    auto x = mt::test::random_tensor({2, 3, 8}, rng, -3.0f, 3.0f);  // (B, T, 2F), F = 4
    auto y = mt::Tensor::empty({2, 3, 4}, mt::DType::f32);
    be().glu_forward({}, x, y);
    const float* xp = mt::test::f32(x);
    for (int64_t r = 0; r < 6; ++r)
        for (int64_t j = 0; j < 4; ++j) {
            double gate = xp[r * 8 + j], up = xp[r * 8 + 4 + j];
            EXPECT_NEAR(mt::test::f32(y)[r * 4 + j], gate / (1 + std::exp(-gate)) * up, 1e-6);
        }
}

// GPT-OSS's experts (megatron-core's glu with --quick-geglu --glu-linear-offset 1
// --activation-func-clamp-value): the gate clamped above, the linear half to [-c, c].
TEST_P(Glu, ClampedQuickGegluIsMegatronsFormula) {
    std::mt19937 rng(16);
    auto x = mt::test::random_tensor({5, 12}, rng, -4.0f, 4.0f);
    auto y = mt::Tensor::empty({5, 6}, mt::DType::f32);
    const mt::ops::GluConfig glu{UnaryOp::quick_gelu, 1.0f, 1.5f};
    be().glu_forward(glu, x, y);
    const float* xp = mt::test::f32(x);
    for (int64_t r = 0; r < 5; ++r)
        for (int64_t j = 0; j < 6; ++j) {
            const double gate = std::min<double>(xp[r * 12 + j], 1.5);
            const double up = std::clamp<double>(xp[r * 12 + 6 + j], -1.5, 1.5);
            EXPECT_NEAR(mt::test::f32(y)[r * 6 + j],
                        gate / (1 + std::exp(-1.702 * gate)) * (up + 1.0), 1e-6);
        }
}

// Gemma's GeGLU (--geglu): the tanh GELU of the gate (transformers' gelu_pytorch_tanh) times up.
TEST_P(Glu, GegluIsTheTanhGeluOfTheGateTimesUp) {
    std::mt19937 rng(17);
    auto x = mt::test::random_tensor({3, 8}, rng, -4.0f, 4.0f);
    auto y = mt::Tensor::empty({3, 4}, mt::DType::f32);
    be().glu_forward({UnaryOp::gelu}, x, y);
    const float* xp = mt::test::f32(x);
    for (int64_t r = 0; r < 3; ++r)
        for (int64_t j = 0; j < 4; ++j) {
            const double g = xp[r * 8 + j], up = xp[r * 8 + 4 + j];
            const double gelu =
                0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
            EXPECT_NEAR(mt::test::f32(y)[r * 4 + j], gelu * up, 1e-6);
        }
}

// Backward against finite differences: SwiGLU, GeGLU, and quick GeGLU with an offset and a
// clamp (inputs kept off the clamp's bounds, where the derivative jumps).
TEST_P(Glu, BackwardMatchesFiniteDifferences) {
    for (const mt::ops::GluConfig glu : {mt::ops::GluConfig{}, mt::ops::GluConfig{UnaryOp::gelu},
                                         mt::ops::GluConfig{UnaryOp::quick_gelu, 1.0f, 1.25f},
                                         mt::ops::GluConfig{UnaryOp::silu, 0.0f, 0.75f}}) {
        std::mt19937 rng(14);
        auto x = mt::test::random_tensor({3, 10}, rng, -2.0f, 2.0f);
        float* xp = mt::test::f32(x);
        for (int64_t i = 0; i < x.numel(); ++i)
            if (std::fabs(std::fabs(xp[i]) - glu.clamp) < 0.05f) xp[i] += 0.1f;
        auto y = mt::Tensor::empty({3, 5}, mt::DType::f32);
        auto dy = mt::test::random_tensor({3, 5}, rng);
        auto w = mt::test::to_doubles(dy);
        auto dx = mt::Tensor::empty(x.shape(), mt::DType::f32);
        be().glu_backward(glu, x, dy, dx);
        auto fd = mt::test::numeric_grad(
            x, [&] { be().glu_forward(glu, x, y); }, y, w, 1e-2);
        mt::test::expect_close(mt::test::to_doubles(dx), fd, 2e-4, 2e-3, "dx");
    }
}

// Where the clamp binds the gradient is zero, as torch's clamp gives it.
TEST_P(Glu, ClampedInputsGetNoGradient) {
    auto x = mt::Tensor::empty({1, 4}, mt::DType::f32);
    float* xp = mt::test::f32(x);
    xp[0] = 3.0f, xp[1] = -3.0f;  // gates: the first above the clamp
    xp[2] = 0.5f, xp[3] = 2.5f;   // linear halves: the second beyond it
    auto dy = mt::Tensor::empty({1, 2}, mt::DType::f32);
    mt::test::f32(dy)[0] = mt::test::f32(dy)[1] = 1.0f;
    auto dx = mt::Tensor::empty({1, 4}, mt::DType::f32);
    be().glu_backward({UnaryOp::quick_gelu, 1.0f, 2.0f}, x, dy, dx);
    const float* d = mt::test::f32(dx);
    EXPECT_EQ(d[0], 0.0f);
    EXPECT_NE(d[1], 0.0f);
    EXPECT_NE(d[2], 0.0f);
    EXPECT_EQ(d[3], 0.0f);
}

TEST_P(Glu, RejectsOddWidthAndWrongOutput) {
    auto odd = mt::Tensor::zeros({2, 5}, mt::DType::f32);
    auto y = mt::Tensor::zeros({2, 2}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] { be().glu_forward({}, odd, y); }).find("even last dim"),
              std::string::npos);
    auto x = mt::Tensor::zeros({2, 6}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().glu_forward({}, x, y);
              }).find("glu_forward: y must have shape [2, 3]"),
              std::string::npos);
}

class Arithmetic : public mt::test::BackendTest {};

TEST_P(Arithmetic, AddScaleAxpy) {
    std::mt19937 rng(15);
    auto a = mt::test::random_tensor({5, 3}, rng), b = mt::test::random_tensor({5, 3}, rng);
    auto y = mt::Tensor::empty({5, 3}, mt::DType::f32);
    be().add(a, b, y);
    for (int64_t i = 0; i < 15; ++i)
        EXPECT_EQ(mt::test::f32(y)[i], mt::test::f32(a)[i] + mt::test::f32(b)[i]);
    auto s = mt::Tensor::empty({5, 3}, mt::DType::f32);
    be().scale(a, -2.5f, s);
    for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(mt::test::f32(s)[i], -2.5f * mt::test::f32(a)[i]);
    auto acc = b.clone();
    be().axpy(0.5f, a, acc);
    for (int64_t i = 0; i < 15; ++i)
        EXPECT_EQ(mt::test::f32(acc)[i], mt::test::f32(b)[i] + 0.5f * mt::test::f32(a)[i]);
}

TEST_P(Arithmetic, RejectsMismatchedOrNonContiguous) {
    auto a = mt::Tensor::zeros({4, 3}, mt::DType::f32);
    auto b = mt::Tensor::zeros({3, 4}, mt::DType::f32);
    auto y = mt::Tensor::zeros({4, 3}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().add(a, b, y);
              }).find("add: b must have shape [4, 3], got f32[3, 4]"),
              std::string::npos);
    auto t = a.transpose(0, 1);
    auto yt = mt::Tensor::zeros({3, 4}, mt::DType::f32);
    EXPECT_NE(
        mt::test::error_of([&] { be().scale(t, 1.0f, yt); }).find("scale: x must be contiguous"),
        std::string::npos);
    auto ints = mt::Tensor::zeros({4, 3}, mt::DType::i32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().unary_forward(UnaryOp::gelu, ints, y);
              }).find("unary_forward: x must be f32"),
              std::string::npos);
}

}  // namespace

// exp and log (the vocab-parallel log-sum-exp merge) on positive inputs, forward and backward.
TEST_P(Arithmetic, ExpAndLog) {
    std::mt19937 rng(13);
    for (UnaryOp op : {UnaryOp::exp, UnaryOp::log}) {
        auto x = mt::test::random_tensor({5, 7}, rng, 0.1f, 3.0f);
        auto y = mt::Tensor::empty(x.shape(), mt::DType::f32);
        be().unary_forward(op, x, y);
        std::vector<double> expected;
        for (double v : mt::test::to_doubles(x)) expected.push_back(oracle(op, v));
        mt::test::expect_close(mt::test::to_doubles(y), expected, 1e-6, 1e-6, "y");
        auto dy = mt::test::random_tensor(x.shape(), rng);
        auto dx = mt::Tensor::empty(x.shape(), mt::DType::f32);
        be().unary_backward(op, x, dy, dx);
        auto fd = mt::test::numeric_grad(
            x, [&] { be().unary_forward(op, x, y); }, y, mt::test::to_doubles(dy), 1e-3);
        mt::test::expect_close(mt::test::to_doubles(dx), fd, 2e-3, 2e-3, "dx");
    }
}

MT_INSTANTIATE_BACKENDS(Glu);

MT_INSTANTIATE_BACKENDS(Arithmetic);
