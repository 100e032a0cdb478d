// CPU cross-entropy: per-row loss and log-sum-exp against a naive double loop (i64 and i32
// targets, large logits), dlogits against central differences of sum(dloss * loss), the
// OpenMP path, and target / shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

using mt::Tensor;
using mt::test::f32;
using mt::test::to_doubles;

Tensor random_targets(const mt::Shape& shape, int64_t vocab, std::mt19937& rng, mt::DType dtype) {
    auto t = Tensor::empty(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t id = int64_t(rng() % uint64_t(vocab));
        if (dtype == mt::DType::i64)
            t.data<int64_t>()[i] = id;
        else
            t.data<int32_t>()[i] = int32_t(id);
    }
    return t;
}

int64_t target_at(const Tensor& t, int64_t i) {
    return t.dtype() == mt::DType::i64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
}

class CrossEntropy : public mt::test::BackendTestWith<mt::DType> {};

TEST_P(CrossEntropy, ForwardMatchesDouble) {
    std::mt19937 rng(40);
    const int64_t vocab = 37;
    auto logits = mt::test::random_tensor({2, 3, vocab}, rng, -8.0f, 8.0f);
    f32(logits)[5] = 80.0f;  // exp would overflow float without the running max
    auto targets = random_targets({2, 3}, vocab, rng, param());
    auto losses = Tensor::empty({2, 3}, mt::DType::f32),
         lse = Tensor::empty({2, 3}, mt::DType::f32);
    be().cross_entropy_forward(logits, targets, losses, lse);
    for (int64_t r = 0; r < 6; ++r) {
        const float* row = f32(logits) + r * vocab;
        double m = *std::max_element(row, row + vocab), s = 0;
        for (int64_t j = 0; j < vocab; ++j) s += std::exp(double(row[j]) - m);
        double expected_lse = m + std::log(s);
        EXPECT_NEAR(f32(lse)[r], expected_lse, 2e-6 * (1 + std::fabs(expected_lse)));
        EXPECT_NEAR(f32(losses)[r], expected_lse - row[target_at(targets, r)], 1e-5);
    }
}

TEST_P(CrossEntropy, BackwardMatchesFiniteDifferences) {
    std::mt19937 rng(41);
    const int64_t vocab = 13;
    auto logits = mt::test::random_tensor({5, vocab}, rng, -3.0f, 3.0f);
    auto targets = random_targets({5}, vocab, rng, param());
    auto losses = Tensor::empty({5}, mt::DType::f32), lse = Tensor::empty({5}, mt::DType::f32);
    auto run = [&] { be().cross_entropy_forward(logits, targets, losses, lse); };
    run();
    auto dlosses = mt::test::random_tensor({5}, rng, 0.1f, 2.0f);  // e.g. loss-mask / num_tokens
    auto dlogits = Tensor::empty(logits.shape(), mt::DType::f32);
    be().cross_entropy_backward(logits, targets, lse, dlosses, dlogits);
    auto fd = mt::test::numeric_grad(logits, run, losses, to_doubles(dlosses), 1e-2);
    mt::test::expect_close(to_doubles(dlogits), fd, 2e-4, 3e-3, "dlogits");
}

MT_INSTANTIATE_BACKENDS_WITH(CrossEntropy, testing::Values(mt::DType::i64, mt::DType::i32),
                             [](mt::DType t) { return std::string(mt::dtype_name(t)); });

class CrossEntropyOp : public mt::test::BackendTest {};

TEST_P(CrossEntropyOp, LargeVocabularyRowsSumToZeroGradient) {
    std::mt19937 rng(42);
    const int64_t rows = 8, vocab = 5000;  // above the parallel threshold
    auto logits = mt::test::random_tensor({rows, vocab}, rng, -4.0f, 4.0f);
    auto targets = random_targets({rows}, vocab, rng, mt::DType::i64);
    auto losses = Tensor::empty({rows}, mt::DType::f32),
         lse = Tensor::empty({rows}, mt::DType::f32);
    be().cross_entropy_forward(logits, targets, losses, lse);
    auto ones = Tensor::empty({rows}, mt::DType::f32);
    for (int64_t r = 0; r < rows; ++r) f32(ones)[r] = 1.0f;
    auto dlogits = Tensor::empty(logits.shape(), mt::DType::f32);
    be().cross_entropy_backward(logits, targets, lse, ones, dlogits);
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;  // softmax sums to 1, the one-hot subtracts 1
        for (int64_t j = 0; j < vocab; ++j) sum += f32(dlogits)[r * vocab + j];
        EXPECT_NEAR(sum, 0.0, 1e-5) << r;
        EXPECT_LT(f32(dlogits)[r * vocab + target_at(targets, r)], 0.0f);
    }
}

// Large rows (the vectorised exps, with a tail) against a double loop, lse and dlogits.
TEST_P(CrossEntropyOp, LargeVocabularyMatchesDouble) {
    std::mt19937 rng(43);
    const int64_t rows = 6, vocab = 5003;
    auto logits = mt::test::random_tensor({rows, vocab}, rng, -12.0f, 12.0f);
    f32(logits)[2 * vocab + 17] = -INFINITY;  // a masked column
    auto targets = random_targets({rows}, vocab, rng, mt::DType::i64);
    auto losses = Tensor::empty({rows}, mt::DType::f32),
         lse = Tensor::empty({rows}, mt::DType::f32);
    be().cross_entropy_forward(logits, targets, losses, lse);
    auto dlosses = mt::test::random_tensor({rows}, rng, 0.1f, 2.0f);
    auto dlogits = Tensor::empty(logits.shape(), mt::DType::f32);
    be().cross_entropy_backward(logits, targets, lse, dlosses, dlogits);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = f32(logits) + r * vocab;
        double m = *std::max_element(row, row + vocab), s = 0;
        for (int64_t j = 0; j < vocab; ++j) s += std::exp(double(row[j]) - m);
        const double expected_lse = m + std::log(s);
        EXPECT_NEAR(f32(lse)[r], expected_lse, 2e-6 * std::fabs(expected_lse)) << r;
        for (int64_t j = 0; j < vocab; ++j) {
            const double p = std::exp(double(row[j]) - expected_lse);
            const double expected = f32(dlosses)[r] * (p - (j == target_at(targets, r) ? 1 : 0));
            ASSERT_NEAR(f32(dlogits)[r * vocab + j], expected, 1e-6) << r << " " << j;
        }
    }
}

// Rows that are all masked, or hold +inf or NaN: the log-sum-exp the running-max fold gives
// (-inf, +inf, NaN), whichever way the row is summed.
TEST_P(CrossEntropyOp, NonFiniteRowsGiveTheFoldsLogSumExp) {
    const int64_t vocab = 40;
    auto logits = Tensor::zeros({3, vocab}, mt::DType::f32);
    for (int64_t j = 0; j < vocab; ++j) f32(logits)[j] = -INFINITY;
    f32(logits)[vocab + 7] = INFINITY;
    f32(logits)[2 * vocab + 30] = NAN;
    auto targets = Tensor::zeros({3}, mt::DType::i64);
    auto losses = Tensor::empty({3}, mt::DType::f32), lse = Tensor::empty({3}, mt::DType::f32);
    be().cross_entropy_forward(logits, targets, losses, lse);
    EXPECT_EQ(f32(lse)[0], -INFINITY);
    EXPECT_EQ(f32(lse)[1], INFINITY);
    EXPECT_TRUE(std::isnan(f32(lse)[2]));
}

TEST_P(CrossEntropyOp, RejectsBadTargets) {
    auto logits = Tensor::zeros({2, 4}, mt::DType::f32);
    auto losses = Tensor::zeros({2}, mt::DType::f32), lse = Tensor::zeros({2}, mt::DType::f32);
    auto targets = Tensor::zeros({2}, mt::DType::i64);
    targets.data<int64_t>()[1] = 4;
    EXPECT_NE(mt::test::error_of([&] {
                  be().cross_entropy_forward(logits, targets, losses, lse);
              }).find("target 4 of row 1 is outside the vocabulary [0, 4)"),
              std::string::npos);
    auto floats = Tensor::zeros({2}, mt::DType::f32);
    EXPECT_NE(mt::test::error_of([&] {
                  be().cross_entropy_forward(logits, floats, losses, lse);
              }).find("targets must be i64 or i32"),
              std::string::npos);
    auto wrong = Tensor::zeros({3}, mt::DType::i64);
    EXPECT_NE(mt::test::error_of([&] {
                  be().cross_entropy_forward(logits, wrong, losses, lse);
              }).find("targets must have shape [2]"),
              std::string::npos);
}

}  // namespace

MT_INSTANTIATE_BACKENDS(CrossEntropyOp);
