// The CPU backend's GEMM against a naive double-precision loop, every transpose combination,
// strided operands, and shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mt/backend.h"
#include "mt/error.h"

namespace {

mt::Tensor random_matrix(int64_t r, int64_t c, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1, 1);
    auto t = mt::Tensor::empty({r, c}, mt::DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    return t;
}

float at(const mt::Tensor& t, int64_t i, int64_t j) {
    return t.data<float>()[i * t.strides()[0] + j * t.strides()[1]];
}

class Gemm : public testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Gemm, MatchesNaiveLoop) {
    auto [ta, tb] = GetParam();
    std::mt19937 rng(42);
    const int64_t m = 37, n = 29, k = 53;
    auto a = ta ? random_matrix(k, m, rng) : random_matrix(m, k, rng);
    auto b = tb ? random_matrix(n, k, rng) : random_matrix(k, n, rng);
    auto c = random_matrix(m, n, rng);
    auto c0 = c.clone();
    auto backend = mt::make_cpu_backend();
    backend->gemm(ta ? mt::Transpose::yes : mt::Transpose::no,
                  tb ? mt::Transpose::yes : mt::Transpose::no, 0.5f, a, b, 2.0f, c);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < k; ++p)
                s +=
                    double(ta ? at(a, p, i) : at(a, i, p)) * double(tb ? at(b, j, p) : at(b, p, j));
            EXPECT_NEAR(at(c, i, j), 0.5 * s + 2.0 * at(c0, i, j), 1e-4) << i << "," << j;
        }
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm, testing::Combine(testing::Bool(), testing::Bool()));

// The few-row A B^T products of decoding take the streaming kernel: every row count up to and
// past its limit, k with and without a 16-lane tail, short rows of B (one row of A reads them
// one at a time) and long ones (3100: read side by side), odd n, strided A and C, beta 0
// ignoring C.
TEST(CpuBackend, SkinnyGemmMatchesNaiveLoop) {
    std::mt19937 rng(3);
    auto backend = mt::make_cpu_backend();
    for (int64_t m : {1, 2, 5, 8, 9, 16, 17})
        for (int64_t k : {7, 16, 53, 768, 3100}) {
            const int64_t n = 67;
            auto a = random_matrix(m, k + 3, rng).slice(1, 0, k);
            auto b = random_matrix(n, k, rng);
            for (float beta : {0.0f, 1.5f}) {
                auto c_big = random_matrix(m, n + 2, rng);
                if (beta == 0.0f) c_big.data<float>()[0] = NAN;  // must not leak through
                auto c = c_big.slice(1, 0, n);
                auto c0 = c.clone();
                backend->gemm(mt::Transpose::no, mt::Transpose::yes, 0.5f, a, b, beta, c);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                        double s = 0;
                        for (int64_t p = 0; p < k; ++p) s += double(at(a, i, p)) * at(b, j, p);
                        const double prior = beta == 0.0f ? 0.0 : beta * at(c0, i, j);
                        ASSERT_NEAR(at(c, i, j), 0.5 * s + prior, 1e-4 * (1 + std::abs(s)))
                            << "m " << m << " k " << k << " beta " << beta << " at " << i << ","
                            << j;
                    }
            }
        }
}

// A row of A gets the same bits whatever rows share its product (a request decoded alone or in a
// batch): each row's dot products are summed in one order by every kernel shape.
TEST(CpuBackend, SkinnyGemmRowsDoNotDependOnTheirNeighbours) {
    std::mt19937 rng(4);
    auto backend = mt::make_cpu_backend();
    for (int64_t k : {53, 896, 3100}) {
        const int64_t n = 67, m = 9;
        auto a = random_matrix(m, k, rng);
        auto b = random_matrix(n, k, rng);
        auto all = mt::Tensor::empty({m, n}, mt::DType::f32);
        backend->gemm(mt::Transpose::no, mt::Transpose::yes, 1.0f, a, b, 0.0f, all);
        for (int64_t i = 0; i < m; ++i) {
            auto one = mt::Tensor::empty({1, n}, mt::DType::f32);
            backend->gemm(mt::Transpose::no, mt::Transpose::yes, 1.0f, a.slice(0, i, i + 1), b,
                          0.0f, one);
            for (int64_t j = 0; j < n; ++j)
                ASSERT_EQ(at(one, 0, j), at(all, i, j)) << "k " << k << " at " << i << "," << j;
        }
    }
}

// A MoE layer's experts on their rows: the fused pass (every group at most 16 rows) and the
// gemm per group (a larger group) give each group's rows bit for bit what a gemm on them gives;
// empty groups leave nothing behind.
TEST(CpuBackend, GroupedGemmGivesEachGroupsGemm) {
    std::mt19937 rng(5);
    auto backend = mt::make_cpu_backend();
    const int64_t n = 150, k = 77;
    for (const std::vector<int64_t> rows :
         {std::vector<int64_t>{2, 0, 1, 9, 16, 3}, std::vector<int64_t>{0, 17, 4}}) {
        int64_t m = 0;
        for (int64_t r : rows) m += r;
        auto x = random_matrix(m, k, rng);
        std::vector<mt::Tensor> weights;
        for (size_t j = 0; j < rows.size(); ++j) weights.push_back(random_matrix(n, k, rng));
        auto y = random_matrix(m, n, rng);
        backend->grouped_gemm_nt(x, rows, weights, y);
        int64_t begin = 0;
        for (size_t j = 0; j < rows.size(); ++j) {
            if (rows[j] == 0) continue;
            auto want = mt::Tensor::empty({rows[j], n}, mt::DType::f32);
            backend->gemm(mt::Transpose::no, mt::Transpose::yes, 1.0f,
                          x.slice(0, begin, begin + rows[j]), weights[j], 0.0f, want);
            for (int64_t i = 0; i < rows[j]; ++i)
                for (int64_t c = 0; c < n; ++c)
                    ASSERT_EQ(at(y, begin + i, c), at(want, i, c)) << "group " << j;
            begin += rows[j];
        }
        EXPECT_THROW(backend->grouped_gemm_nt(x.slice(0, 0, m - 1), rows, weights, y), mt::Error);
    }
}

TEST(CpuBackend, GemmOnStridedViewsAndBatches) {
    std::mt19937 rng(7);
    auto big = random_matrix(8, 16, rng);
    auto a = big.slice(1, 0, 5);  // 8x5 with leading dimension 16
    auto b = random_matrix(5, 3, rng);
    auto backend = mt::make_cpu_backend();
    auto c = backend->empty({8, 3}, mt::DType::f32);
    backend->gemm(mt::Transpose::no, mt::Transpose::no, 1.f, a, b, 0.f, c);
    for (int64_t i = 0; i < 8; ++i)
        for (int64_t j = 0; j < 3; ++j) {
            double s = 0;
            for (int64_t p = 0; p < 5; ++p) s += double(at(a, i, p)) * at(b, p, j);
            EXPECT_NEAR(at(c, i, j), s, 1e-5);
        }

    auto a3 = mt::Tensor::empty({2, 4, 3}, mt::DType::f32);
    auto b3 = mt::Tensor::empty({2, 3, 2}, mt::DType::f32);
    for (int64_t i = 0; i < a3.numel(); ++i) a3.data<float>()[i] = float(i % 5) - 2;
    for (int64_t i = 0; i < b3.numel(); ++i) b3.data<float>()[i] = float(i % 3);
    auto c3 = mt::Tensor::zeros({2, 4, 2}, mt::DType::f32);
    backend->gemm_batched(mt::Transpose::no, mt::Transpose::no, 1.f, a3, b3, 0.f, c3);
    for (int64_t bi = 0; bi < 2; ++bi)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 2; ++j) {
                float s = 0;
                for (int64_t p = 0; p < 3; ++p)
                    s += a3.data<float>()[bi * 12 + i * 3 + p] *
                         b3.data<float>()[bi * 6 + p * 2 + j];
                EXPECT_FLOAT_EQ(c3.data<float>()[bi * 8 + i * 2 + j], s);
            }
}

TEST(CpuBackend, ShapeErrors) {
    auto backend = mt::make_cpu_backend();
    auto a = mt::Tensor::zeros({2, 3}, mt::DType::f32);
    auto b = mt::Tensor::zeros({4, 2}, mt::DType::f32);
    auto c = mt::Tensor::zeros({2, 2}, mt::DType::f32);
    EXPECT_THROW(backend->gemm(mt::Transpose::no, mt::Transpose::no, 1, a, b, 0, c), mt::Error);
    auto i = mt::Tensor::zeros({2, 3}, mt::DType::i32);
    EXPECT_THROW(backend->gemm(mt::Transpose::no, mt::Transpose::yes, 1, i, a, 0, c), mt::Error);
}

}  // namespace
