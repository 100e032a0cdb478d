// The CPU ops added for the layers (matmul in f64, embedding gather/scatter-add, bias and
// column sums, rotary embeddings) against naive loops, and their argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend_test.h"
#include "mt/backend.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::test::random_like;
using mt::test::values;

class NnOps : public mt::test::BackendTest {};

TEST_P(NnOps, GemmF64MatchesNaiveProduct) {
    std::mt19937 rng(31);
    Tensor a = random_like({4, 3}, DType::f64, rng), b = random_like({5, 3}, DType::f64, rng);
    Tensor c = random_like({4, 5}, DType::f64, rng);
    std::vector<double> c0 = values(c);
    be().gemm(mt::Transpose::no, mt::Transpose::yes, 1.0f, a, b, 0.5f, c);
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j) {
            double want = 0.5 * c0[i * 5 + j];
            for (int64_t k = 0; k < 3; ++k)
                want += a.data<double>()[i * 3 + k] * b.data<double>()[j * 3 + k];
            EXPECT_NEAR(c.data<double>()[i * 5 + j], want, 1e-14);
        }
}

TEST_P(NnOps, EmbeddingScatterAddsRepeatedIds) {
    Tensor table = Tensor::zeros({4, 2}, DType::f32);
    for (int64_t i = 0; i < 8; ++i) table.data<float>()[i] = float(i);
    Tensor ids = Tensor::empty({3}, DType::i32);
    ids.data<int32_t>()[0] = 2, ids.data<int32_t>()[1] = 0, ids.data<int32_t>()[2] = 2;
    Tensor y = Tensor::empty({3, 2}, DType::f32);
    be().embedding_forward(table, ids, y);
    EXPECT_EQ(values(y), std::vector<double>({4, 5, 0, 1, 4, 5}));
    Tensor dtable = Tensor::zeros({4, 2}, DType::f32);
    be().embedding_backward(y, ids, dtable);
    EXPECT_EQ(values(dtable), std::vector<double>({0, 1, 0, 0, 8, 10, 0, 0}));
    ids.data<int32_t>()[1] = 4;
    EXPECT_NE(mt::test::error_of([&] {
                  be().embedding_forward(table, ids, y);
              }).find("id 4 at 1 is outside the table's rows [0, 4)"),
              std::string::npos);
}

// A vocab-parallel piece holding rows [2, 4) of a 4-row table: other ids give zero rows and
// no gradient; repeated ids still add.
TEST_P(NnOps, EmbeddingShardSkipsOtherRanksIds) {
    Tensor piece = Tensor::zeros({2, 2}, DType::f32);
    for (int64_t i = 0; i < 4; ++i) piece.data<float>()[i] = float(10 + i);
    Tensor ids = Tensor::empty({4}, DType::i64);
    for (int64_t i : {0, 1, 2, 3}) ids.data<int64_t>()[i] = std::vector<int64_t>{3, 0, 2, 3}[i];
    Tensor y = Tensor::empty({4, 2}, DType::f32);
    be().embedding_shard_forward(piece, ids, 2, y);
    EXPECT_EQ(values(y), std::vector<double>({12, 13, 0, 0, 10, 11, 12, 13}));
    Tensor dpiece = Tensor::zeros({2, 2}, DType::f32);
    be().embedding_shard_backward(y, ids, 2, dpiece);
    EXPECT_EQ(values(dpiece), std::vector<double>({10, 11, 24, 26}));
}

TEST_P(NnOps, BiasAndColumnSums) {
    Tensor y = Tensor::zeros({2, 3}, DType::f64);
    Tensor bias = Tensor::empty({3}, DType::f64);
    for (int64_t j = 0; j < 3; ++j) bias.data<double>()[j] = double(j + 1);
    be().add_bias(bias, y);
    EXPECT_EQ(values(y), std::vector<double>({1, 2, 3, 1, 2, 3}));
    be().add_column_sums(y, bias);  // bias += column sums: 1 + 2, 2 + 4, 3 + 6
    EXPECT_EQ(values(bias), std::vector<double>({3, 6, 9}));
    Tensor wrong = Tensor::zeros({2}, DType::f64);
    EXPECT_NE(mt::test::error_of([&] { be().add_bias(wrong, y); }).find("add_bias: bias"),
              std::string::npos);
}

TEST_P(NnOps, RopeRotatesPairsAndBackwardIsTheTranspose) {
    std::mt19937 rng(32);
    const int64_t T = 5, D = 6, R = 4;
    for (DType dtype : {DType::f32, DType::f64}) {
        mt::ops::RopeTables tables = be().rope_tables(T, mt::ops::RopeConfig{R}, dtype);
        Tensor x = random_like({2, T, 3, D}, dtype, rng);
        Tensor y = Tensor::empty(x.shape(), dtype);
        be().rope_forward(x, tables, y);
        std::vector<double> xv = values(x), yv = values(y);
        for (int64_t bt = 0; bt < 2 * T; ++bt)
            for (int64_t h = 0; h < 3; ++h) {
                const int64_t t = bt % T, base = (bt * 3 + h) * D;
                for (int64_t i = 0; i < R / 2; ++i) {
                    double angle = double(t) / std::pow(10000.0, double(2 * i) / double(R));
                    double c = std::cos(angle), s = std::sin(angle);
                    double x1 = xv[base + i], x2 = xv[base + i + R / 2];
                    EXPECT_NEAR(yv[base + i], x1 * c - x2 * s, 1e-6);
                    EXPECT_NEAR(yv[base + i + R / 2], x2 * c + x1 * s, 1e-6);
                }
                for (int64_t j = R; j < D; ++j) EXPECT_EQ(yv[base + j], xv[base + j]);
            }
        // <rope(x), g> == <x, rope^T(g)>.
        Tensor g = random_like(x.shape(), dtype, rng), gt = Tensor::empty(x.shape(), dtype);
        be().rope_backward(g, tables, gt);
        std::vector<double> gv = values(g), gtv = values(gt);
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < xv.size(); ++i) lhs += yv[i] * gv[i], rhs += xv[i] * gtv[i];
        EXPECT_NEAR(lhs, rhs, 1e-5);
    }
}

// --rotary-interleaved pairs neighbours; --use-rope-scaling and the interpolation factor change
// only the angles (Megatron's RotaryEmbedding._apply_scaling and get_freqs_non_repeated).
TEST_P(NnOps, RopeInterleavedPairsAndScaledFrequencies) {
    std::mt19937 rng(33);
    const int64_t T = 5, D = 8;
    mt::ops::RopeConfig config{D, 500000.0, 32.0, 2.0, true};
    // inv_freq 500000^(-2i/8): wavelengths 2*pi x (1, 26.6, 707, 18803): the first two are kept,
    // the third (4443, between 2048 and 8192) is smoothed, the last (> 8192) divided by 32.
    const std::vector<double> inv = mt::ops::rope_inverse_frequencies(config, false);
    ASSERT_EQ(inv.size(), 4u);
    const double wave = 2 * M_PI * std::pow(500000.0, 0.5);
    const double smooth = (8192 / wave - 1) / 3;
    const double want[4] = {
        1.0, std::pow(500000.0, -0.25),
        (1 - smooth) * (1 / std::pow(500000.0, 0.5)) / 32 + smooth / std::pow(500000.0, 0.5),
        std::pow(500000.0, -0.75) / 32};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(inv[size_t(i)], want[i], 1e-15 * (1 + want[i])) << i;
    const std::vector<double> inv32 = mt::ops::rope_inverse_frequencies(config, true);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(inv32[size_t(i)], want[i], 1e-6 * want[i]) << i;

    mt::ops::RopeTables tables = be().rope_tables(T, config, DType::f64);
    EXPECT_TRUE(tables.interleaved);
    Tensor x = random_like({1, T, 2, D}, DType::f64, rng);
    Tensor y = Tensor::empty(x.shape(), DType::f64);
    be().rope_forward(x, tables, y);
    std::vector<double> xv = values(x), yv = values(y);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < D / 2; ++i) {
                const double angle = double(t) / 2 * inv[size_t(i)];
                const int64_t at = (t * 2 + h) * D + 2 * i;
                const double x1 = xv[size_t(at)], x2 = xv[size_t(at + 1)];
                EXPECT_NEAR(yv[size_t(at)], x1 * std::cos(angle) - x2 * std::sin(angle), 1e-12);
                EXPECT_NEAR(yv[size_t(at + 1)], x2 * std::cos(angle) + x1 * std::sin(angle), 1e-12);
            }
    Tensor back = Tensor::empty(x.shape(), DType::f64);
    be().rope_backward(y, tables, back);  // a rotation's transpose is its inverse
    const std::vector<double> bv = values(back);
    for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(bv[i], xv[i], 1e-12) << i;
}

}  // namespace

MT_INSTANTIATE_BACKENDS(NnOps);
