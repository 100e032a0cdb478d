// gemm_bf16 and each of its paths this machine can run (AMX tiles, AVX512-BF16 dot products, the
// portable widened one) against a double-precision product of the same bf16 inputs: every
// transpose combination, ragged and odd sizes, padded leading dimensions, alpha and beta, f32 and
// bf16 C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/skinny_gemm.h"
#include "mt/dtype.h"

namespace {

using GemmFn = decltype(&mt::cpu::gemm_bf16);

struct Case {
    int64_t m, n, k;
    float alpha, beta;
};

// rows x cols bf16 values in [-1, 1] with row stride ld (the padding holds NaN, which must not
// be read).
std::vector<uint16_t> random_bf16(int64_t rows, int64_t cols, int64_t ld, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<uint16_t> x(size_t(rows * ld), mt::float_to_bfloat16(NAN));
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) x[i * ld + j] = mt::float_to_bfloat16(dist(rng));
    }
    return x;
}

// Runs one product through `gemm` and checks every element of C against the double sum, within
// 1e-5 of the sum of |terms| (f32 accumulation order), plus one bf16 ulp for a bf16 C.
void check(GemmFn gemm, bool ta, bool tb, const Case& t, bool c_bf16) {
    SCOPED_TRACE(std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " m=" + std::to_string(t.m) +
                 " n=" + std::to_string(t.n) + " k=" + std::to_string(t.k) +
                 (c_bf16 ? " bf16 C" : " f32 C") + " beta=" + std::to_string(t.beta));
    std::mt19937 rng(unsigned(t.m * 7919 + t.n * 31 + t.k));
    const int64_t a_rows = ta ? t.k : t.m, a_cols = ta ? t.m : t.k;
    const int64_t b_rows = tb ? t.n : t.k, b_cols = tb ? t.k : t.n;
    const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = t.n + 7;
    const auto a = random_bf16(a_rows, a_cols, lda, rng);
    const auto b = random_bf16(b_rows, b_cols, ldb, rng);
    const auto c0 = random_bf16(t.m, t.n, ldc, rng);
    // op(A) row by row and op(B) column by column, widened once for the reference sums.
    std::vector<double> opa(size_t(t.m * t.k)), opb(size_t(t.n * t.k));
    for (int64_t i = 0; i < t.m; ++i) {
        for (int64_t kk = 0; kk < t.k; ++kk) {
            opa[i * t.k + kk] = mt::bfloat16_to_float(ta ? a[kk * lda + i] : a[i * lda + kk]);
        }
    }
    for (int64_t j = 0; j < t.n; ++j) {
        for (int64_t kk = 0; kk < t.k; ++kk) {
            opb[j * t.k + kk] = mt::bfloat16_to_float(tb ? b[j * ldb + kk] : b[kk * ldb + j]);
        }
    }

    std::vector<float> cf(size_t(t.m * ldc));
    for (size_t i = 0; i < cf.size(); ++i) cf[i] = mt::bfloat16_to_float(c0[i]);
    std::vector<uint16_t> cb = c0;
    if (t.beta == 0.0f) {  // beta 0 must ignore C, NaN included
        std::fill(cf.begin(), cf.end(), NAN);
        std::fill(cb.begin(), cb.end(), mt::float_to_bfloat16(NAN));
    }
    const std::vector<float> before_f = cf;
    const std::vector<uint16_t> before_b = cb;
    void* c = c_bf16 ? static_cast<void*>(cb.data()) : static_cast<void*>(cf.data());
    gemm(ta, tb, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta, c, ldc, c_bf16);

    int64_t bad = 0;
    for (int64_t i = 0; i < t.m; ++i) {
        for (int64_t j = 0; j < t.n; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t kk = 0; kk < t.k; ++kk) {
                const double term = opa[i * t.k + kk] * opb[j * t.k + kk];
                sum += term;
                magnitude += std::abs(term);
            }
            const double old = t.beta == 0.0f ? 0.0 : mt::bfloat16_to_float(c0[i * ldc + j]);
            const double want = t.alpha * sum + t.beta * old;
            double tol = 1e-5 * (std::abs(t.alpha) * magnitude + std::abs(t.beta * old)) + 1e-30;
            double got = cf[i * ldc + j];
            if (c_bf16) {
                got = mt::bfloat16_to_float(cb[i * ldc + j]);
                tol += std::ldexp(1.0, std::ilogb(want) - 7);  // one bf16 ulp
            }
            if (!(std::abs(got - want) <= tol) && ++bad <= 5) {
                ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want
                              << " (tolerance " << tol << ")";
            }
        }
    }
    EXPECT_EQ(bad, 0);
    // Padding past each row of C is left alone.
    for (int64_t i = 0; i < t.m; ++i) {
        for (int64_t j = t.n; j < ldc; ++j) {
            if (c_bf16) {
                ASSERT_EQ(cb[i * ldc + j], before_b[i * ldc + j]);
            } else {
                ASSERT_EQ(std::memcmp(&cf[i * ldc + j], &before_f[i * ldc + j], 4), 0);
            }
        }
    }
}

const Case kCases[] = {
    {1, 1, 1, 1.0f, 0.0f},       {17, 33, 65, 1.0f, 0.0f},    {17, 33, 65, 0.5f, -1.25f},
    {130, 257, 70, 1.0f, 1.0f},  {130, 257, 71, -2.0f, 0.0f}, {9, 49, 300, 1.0f, 0.5f},
    {200, 800, 33, 1.0f, 0.0f},  {96, 96, 0, 1.0f, 0.5f},     {3, 1000, 257, 0.25f, 1.0f},
    {64, 2304, 768, 1.0f, 0.0f},  // a GPT-2 QKV projection on 64 tokens
    {40, 1000, 34, 1.0f, 0.5f},   // AMX: k ends inside a tile's 16 pairs, columns past kNc
    {16, 70, 33, 1.0f, 0.0f},     // the skinny path's most rows, k past two vectors
    {5, 130, 3072, 1.0f, -1.0f},  // a T5 decoder step's FFN input, five rows
    {1000, 200, 40, 1.0f, 0.5f},  // taller than wide: the widened path splits C's rows
    {1, 130, 896, 1.0f, 0.5f},    // decoding one token: short rows of B read one at a time
    {1, 37, 6200, 1.0f, 0.0f},    // ... and rows too long for that, read side by side
};

class GemmBf16 : public testing::TestWithParam<std::tuple<bool, bool, bool>> {};

TEST_P(GemmBf16, MatchesDoubleReference) {
    auto [ta, tb, c_bf16] = GetParam();
    for (const Case& t : kCases) check(mt::cpu::gemm_bf16, ta, tb, t, c_bf16);
}

TEST_P(GemmBf16, AmxPathMatchesDoubleReference) {
    if (!mt::cpu::cpu_features().amx_bf16) GTEST_SKIP() << "no AMX-BF16 here (or MT_CPU_ISA)";
    auto [ta, tb, c_bf16] = GetParam();
    for (const Case& t : kCases) check(mt::cpu::gemm_bf16_amx, ta, tb, t, c_bf16);
}

TEST_P(GemmBf16, DotProductPathMatchesDoubleReference) {
    if (!mt::cpu::cpu_features().avx512bf16) GTEST_SKIP() << "no AVX512-BF16 here (or MT_CPU_ISA)";
    auto [ta, tb, c_bf16] = GetParam();
    for (const Case& t : kCases) check(mt::cpu::gemm_bf16_dot, ta, tb, t, c_bf16);
}

TEST_P(GemmBf16, WidenedPathMatchesDoubleReference) {
    auto [ta, tb, c_bf16] = GetParam();
    for (const Case& t : kCases) check(mt::cpu::gemm_bf16_widened, ta, tb, t, c_bf16);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmBf16,
                         testing::Combine(testing::Bool(), testing::Bool(), testing::Bool()));

// Its own case only: A as it is, B transposed, at most kSkinnyRows rows; f32 and bf16 C.
TEST(GemmBf16Skinny, MatchesDoubleReference) {
    auto skinny = [](bool, bool, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                     int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, int64_t ldc,
                     bool c_is_bf16) {
        mt::cpu::gemm_bf16_skinny(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, c_is_bf16);
    };
    for (bool c_bf16 : {false, true})
        for (const Case& t : kCases)
            if (t.m <= mt::cpu::kSkinnyRows) check(skinny, false, true, t, c_bf16);
}

// A row of A gets the same bits whatever rows share its product (a request decoded alone or in a
// batch), on short and long rows of B.
TEST(GemmBf16Skinny, RowsDoNotDependOnTheirNeighbours) {
    std::mt19937 rng(11);
    for (int64_t k : {53, 896, 3100}) {
        const int64_t m = 9, n = 67;
        const auto a = random_bf16(m, k, k, rng);
        const auto b = random_bf16(n, k, k, rng);
        std::vector<float> all(size_t(m * n)), one(static_cast<size_t>(n));
        mt::cpu::gemm_bf16_skinny(m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, all.data(), n,
                                  false);
        for (int64_t i = 0; i < m; ++i) {
            mt::cpu::gemm_bf16_skinny(1, n, k, 1.0f, a.data() + i * k, k, b.data(), k, 0.0f,
                                      one.data(), n, false);
            for (int64_t j = 0; j < n; ++j)
                ASSERT_EQ(std::memcmp(&one[size_t(j)], &all[size_t(i * n + j)], 4), 0)
                    << "k " << k << " at " << i << "," << j;
        }
    }
}

}  // namespace
