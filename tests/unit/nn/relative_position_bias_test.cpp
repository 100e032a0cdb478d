// RelativePositionBias: megatron-core's buckets (tests/fixtures/t5/relative_buckets.txt, made by
// make_relative_buckets.py from its own _relative_position_bucket), the bias as the table's rows
// at them, and the table's gradient.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "mt/backend.h"
#include "mt/nn/relative_position_bias.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::nn::RelativePositionBuckets;

TEST(NnRelativePositionBias, BucketsAreMegatronCores) {
    std::ifstream in(mt::test::fixtures_dir() / "t5" / "relative_buckets.txt");
    ASSERT_TRUE(in) << "tests/fixtures/t5/relative_buckets.txt";
    std::string line;
    int tables = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        int bidirectional = 0;
        RelativePositionBuckets b;
        fields >> bidirectional >> b.num_buckets >> b.max_distance;
        for (int64_t rel = -600; rel <= 600; ++rel) {
            int64_t want = -1;
            ASSERT_TRUE(fields >> want) << line.substr(0, 40);
            ASSERT_EQ(mt::nn::relative_position_bucket(rel, bidirectional != 0, b), want)
                << "bidirectional " << bidirectional << ", " << b.num_buckets << " buckets, "
                << b.max_distance << ": position " << rel;
        }
        ++tables;
    }
    EXPECT_EQ(tables, 6);
}

TEST(NnRelativePositionBias, BiasIsTheTablesRowsAndItsGradientGoesBack) {
    auto be = mt::make_cpu_backend();
    const RelativePositionBuckets buckets{8, 20};
    const int64_t heads = 3;
    for (bool bidirectional : {true, false}) {
        mt::nn::RelativePositionBias bias("encoder_relative_pos_emb", bidirectional, buckets, heads,
                                          DType::f64, *be, {});
        std::vector<mt::nn::Parameter*> params;
        bias.collect_parameters(params);
        ASSERT_EQ(params.size(), 1u);
        mt::nn::Parameter& table = *params[0];
        EXPECT_EQ(table.name, "encoder_relative_pos_emb.relative_attention_bias.weight");
        EXPECT_EQ(table.value.shape(), mt::Shape({8, heads}));
        std::mt19937 rng(3);
        mt::test::fill_random(table.value, rng, -1, 1);
        const double* w = table.value.data<double>();
        // Decoding: queries 5, 6 over keys 0 .. 6.
        const Tensor got = bias.forward(5, 2, 7);
        ASSERT_EQ(got.shape(), mt::Shape({heads, 2, 7}));
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < 2; ++t)
                for (int64_t s = 0; s < 7; ++s) {
                    const int64_t b =
                        mt::nn::relative_position_bucket(s - (5 + t), bidirectional, buckets);
                    ASSERT_EQ(got.data<double>()[(h * 2 + t) * 7 + s], w[b * heads + h]);
                }
        // The gradient: each table entry sums the bias entries of its bucket.
        const int64_t T = 30;
        Tensor dbias = mt::test::random_like({heads, T, T}, DType::f64, rng, -1, 1);
        std::vector<double> want(size_t(8 * heads), 0.0);
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t s = 0; s < T; ++s)
                    want[size_t(mt::nn::relative_position_bucket(s - t, bidirectional, buckets) *
                                    heads +
                                h)] += dbias.data<double>()[(h * T + t) * T + s];
        bias.backward(dbias);
        bias.backward(dbias);  // accumulates
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(table.grad.data<double>()[i], 2 * want[i], 1e-12) << i;
    }
}

TEST(NnRelativePositionBias, TablesMegatronWouldDivideByZeroAreRefused) {
    auto be = mt::make_cpu_backend();
    const std::string msg = mt::test::error_of([&] {
        mt::nn::RelativePositionBias("decoder_relative_pos_emb", false, {32, 16}, 4, DType::f32,
                                     *be, {});
    });
    EXPECT_NE(msg.find("--relative-attention-max-distance (16) must exceed 16"), std::string::npos)
        << msg;
}

}  // namespace
