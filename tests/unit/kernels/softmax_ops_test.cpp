// CPU softmax over the last dim with a scale and an optional causal mask: forward against a
// naive double loop (rows sum to 1, masked entries 0), backward against central differences of
// the whole op, the OpenMP path, and shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

using mt::Tensor;
using mt::ops::SoftmaxMask;
using mt::test::f32;
using mt::test::to_doubles;

// softmax(scale x) per row in double; causal rows of a (..., T, S) tensor see s <= t + S - T.
std::vector<double> reference(const Tensor& x, float scale, SoftmaxMask mask) {
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    const int64_t queries = mask == SoftmaxMask::causal ? x.size(-2) : 1;
    std::vector<double> y(x.numel(), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = r % queries;
        auto visible = [&](int64_t s) {
            return mask == SoftmaxMask::none || s <= t + cols - queries;
        };
        double m = -INFINITY, sum = 0;
        for (int64_t s = 0; s < cols; ++s)
            if (visible(s)) m = std::max(m, double(scale) * f32(x)[r * cols + s]);
        for (int64_t s = 0; s < cols; ++s)
            if (visible(s)) sum += std::exp(double(scale) * f32(x)[r * cols + s] - m);
        for (int64_t s = 0; s < cols; ++s)
            if (visible(s))
                y[r * cols + s] = std::exp(double(scale) * f32(x)[r * cols + s] - m) / sum;
    }
    return y;
}

struct Case {
    SoftmaxMask mask;
    mt::Shape shape;  // (B, heads, T, S)
    float scale;
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << (c.mask == SoftmaxMask::causal ? "causal " : "") << mt::shape_str(c.shape) << " scale "
        << c.scale;
}

class Softmax : public mt::test::BackendTestWith<Case> {};

TEST_P(Softmax, ForwardMatchesDoubleAndRowsSumToOne) {
    const Case c = param();
    std::mt19937 rng(30);
    auto x = mt::test::random_tensor(c.shape, rng, -6.0f, 6.0f);
    auto y = Tensor::empty(c.shape, mt::DType::f32);
    be().softmax_forward(x, c.scale, c.mask, y);
    auto ref = reference(x, c.scale, c.mask);
    mt::test::expect_close(to_doubles(y), ref, 1e-7, 2e-6, "y");
    const int64_t cols = c.shape.back();
    for (int64_t r = 0; r < x.numel() / cols; ++r) {
        double sum = 0;
        for (int64_t s = 0; s < cols; ++s) {
            sum += f32(y)[r * cols + s];
            if (ref[r * cols + s] == 0.0) {
                EXPECT_EQ(f32(y)[r * cols + s], 0.0f) << "masked";
            }
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << r;
    }
}

TEST_P(Softmax, BackwardMatchesFiniteDifferences) {
    const Case c = param();
    std::mt19937 rng(31);
    auto x = mt::test::random_tensor(c.shape, rng, -2.0f, 2.0f);
    auto y = Tensor::empty(c.shape, mt::DType::f32);
    auto run = [&] { be().softmax_forward(x, c.scale, c.mask, y); };
    run();
    auto dy = mt::test::random_tensor(c.shape, rng);
    auto dx = Tensor::empty(c.shape, mt::DType::f32);
    be().softmax_backward(y, dy, c.scale, dx);
    auto fd = mt::test::numeric_grad(x, run, y, to_doubles(dy), 1e-2);
    mt::test::expect_close(to_doubles(dx), fd, 1e-4, 3e-3, "dx");
}

MT_INSTANTIATE_BACKENDS_WITH(
    Softmax,
    testing::Values(Case{SoftmaxMask::none, {2, 3, 11}, 1.0f},
                    Case{SoftmaxMask::none, {1, 2, 3, 20}, 0.125f},
                    Case{SoftmaxMask::causal, {2, 2, 6, 6}, 0.35f},  // square: upper triangle
                    Case{SoftmaxMask::causal, {1, 2, 3, 7}, 1.0f}),  // 4 cached keys
    mt::test::printed_name<Case>);

class SoftmaxOp : public mt::test::BackendTest {};

TEST_P(SoftmaxOp, CausalFirstRowIsOneHotForSquareScores) {
    std::mt19937 rng(32);
    auto x = mt::test::random_tensor({4, 4}, rng);
    auto y = Tensor::empty({4, 4}, mt::DType::f32);
    be().softmax_forward(x, 1.0f, SoftmaxMask::causal, y);
    EXPECT_EQ(f32(y)[0], 1.0f);
    for (int s = 1; s < 4; ++s) EXPECT_EQ(f32(y)[s], 0.0f);
}

TEST_P(SoftmaxOp, LargeInputMatchesRowByRow) {
    std::mt19937 rng(33);
    auto x = mt::test::random_tensor({2, 4, 128, 128}, rng, -5.0f, 5.0f);  // above the threshold
    auto y = Tensor::empty(x.shape(), mt::DType::f32);
    be().softmax_forward(x, 0.5f, SoftmaxMask::causal, y);
    auto ref = reference(x, 0.5f, SoftmaxMask::causal);
    mt::test::expect_close(to_doubles(y), ref, 1e-7, 2e-6, "y");
}

TEST_P(SoftmaxOp, RejectsCausalWithFewerKeysThanQueries) {
    auto x = Tensor::zeros({5, 3}, mt::DType::f32), y = Tensor::zeros({5, 3}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().softmax_forward(x, 1.0f, SoftmaxMask::causal, y);
              }).find("causal mask needs S >= T"),
              std::string::npos);
    auto dy = Tensor::zeros({5, 4}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().softmax_backward(y, dy, 1.0f, y);
              }).find("softmax_backward: dy must have shape [5, 3]"),
              std::string::npos);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(SoftmaxOp);
