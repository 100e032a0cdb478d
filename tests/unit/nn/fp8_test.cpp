// FP8 emulation (mt/nn/fp8.h, mt/nn/fp8_scaling.h): the CPU's cast against PyTorch's
// float8 casts, TE's saturation and scale rules, and a bf16 Linear with FP8 GEMMs against
// Transformer Engine's reference current-scaling quantizer and its delayed-scaling update
// (tests/fixtures/fp8/make_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "mt/backend.h"
#include "mt/nn/fp8.h"
#include "mt/nn/fp8_scaling.h"
#include "mt/nn/linear.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::ops::Fp8Type;
using mt::test::Stored;

std::map<std::string, Stored> fixture(const char* file) {
    return mt::test::load_stored_tensors(mt::test::fixtures_dir() / "fp8" / file);
}

Tensor tensor_of(mt::Backend& be, const Stored& s, DType dtype) {
    Tensor f = Tensor::empty(s.shape, DType::f32);
    for (size_t i = 0; i < s.values.size(); ++i) f.data<float>()[i] = float(s.values[i]);
    if (dtype == DType::f32) return f;
    Tensor t = Tensor::empty(s.shape, dtype);
    be.cast(f, t);
    return t;
}

std::vector<double> values_of(mt::Backend& be, const Tensor& t) {
    Tensor f = Tensor::empty(t.shape(), DType::f32);
    be.cast(be.contiguous(t), f);
    return mt::test::values(f);
}

std::vector<float> quantized(mt::Backend& be, const std::vector<float>& in, Fp8Type type,
                             float scale = 1.0f) {
    Tensor x = Tensor::empty({int64_t(in.size())}, DType::f32);
    for (size_t i = 0; i < in.size(); ++i) x.data<float>()[i] = in[i];
    Tensor y = Tensor::empty(x.shape(), DType::f32);
    be.fp8_quantize(x, scale, type, y);
    return {y.data<float>(), y.data<float>() + in.size()};
}

TEST(Fp8, QuantizeEqualsTorchFloat8Casts) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("quantize.txt");
    for (const auto& [name, type] : {std::pair{"e4m3", Fp8Type::e4m3}, {"e5m2", Fp8Type::e5m2}}) {
        const Stored& in = ref.at(std::string(name) + "_in");
        const Stored& want = ref.at(std::string(name) + "_out");
        const std::vector<float> got =
            quantized(*be, std::vector<float>(in.values.begin(), in.values.end()), type);
        for (size_t i = 0; i < got.size(); ++i)
            EXPECT_EQ(got[i], float(want.values[i])) << name << " of " << in.values[i];
    }
}

// Transformer Engine casts with saturation (__NV_SATFINITE): past the largest finite value, and
// at infinity, the result is that value (torch's cast gives NaN or inf there); NaN stays NaN.
TEST(Fp8, SaturatesAtTheLargestFiniteValueAndKeepsNan) {
    auto be = mt::make_cpu_backend();
    const float inf = std::numeric_limits<float>::infinity();
    auto e4m3 = quantized(*be, {480.0f, -1e6f, inf, -inf, std::nanf("")}, Fp8Type::e4m3);
    EXPECT_EQ(e4m3[0], 448.0f);
    EXPECT_EQ(e4m3[1], -448.0f);
    EXPECT_EQ(e4m3[2], 448.0f);
    EXPECT_EQ(e4m3[3], -448.0f);
    EXPECT_TRUE(std::isnan(e4m3[4]));
    auto e5m2 = quantized(*be, {61440.0f, 1e9f, -inf}, Fp8Type::e5m2);
    EXPECT_EQ(e5m2[0], 57344.0f);
    EXPECT_EQ(e5m2[1], 57344.0f);
    EXPECT_EQ(e5m2[2], -57344.0f);
    // Read back with the scale's f32 reciprocal: 3 * 0.5 = 1.5 quantizes to 1.5, times 2.
    EXPECT_EQ(quantized(*be, {3.0f}, Fp8Type::e4m3, 0.5f)[0], 3.0f);
}

TEST(Fp8, CurrentScaleFollowsTransformerEngine) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(mt::nn::fp8_current_scale(0.0, Fp8Type::e4m3, DType::bf16), 1.0f);
    EXPECT_EQ(mt::nn::fp8_current_scale(inf, Fp8Type::e4m3, DType::bf16), 1.0f);
    EXPECT_EQ(mt::nn::fp8_current_scale(std::nan(""), Fp8Type::e5m2, DType::f32), 1.0f);
    EXPECT_EQ(mt::nn::fp8_current_scale(2.0, Fp8Type::e4m3, DType::f32), 224.0f);
    EXPECT_EQ(mt::nn::fp8_current_scale(3.0, Fp8Type::e5m2, DType::f32), 57344.0f / 3.0f);
    // An amax so small that max / amax overflows: the input dtype's largest finite value.
    EXPECT_EQ(mt::nn::fp8_current_scale(1e-45, Fp8Type::e4m3, DType::f32),
              std::numeric_limits<float>::max());
    EXPECT_EQ(mt::nn::fp8_current_scale(1e-45, Fp8Type::e4m3, DType::bf16), 3.38953139e38f);
}

// y, dx and dW of a bf16 linear with FP8 GEMMs, with --fp8-format hybrid (E5M2 gradients) and
// e4m3: y and dx equal the reference's bf16 values, dW its f32 sums.
TEST(Fp8, LinearMatchesTransformerEngineReference) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("linear.txt");
    for (const bool hybrid : {true, false}) {
        const std::string fmt = hybrid ? "hybrid" : "e4m3";
        mt::nn::Linear lin("l", 16, 12, false, DType::bf16, {}, *be);
        lin.weight().value = tensor_of(*be, ref.at("weight"), DType::bf16);
        lin.weight().grad = be->zeros({12, 16}, DType::f32);
        lin.use_fp8({true, hybrid});
        const Tensor x = tensor_of(*be, ref.at("x"), DType::bf16);
        mt::nn::Linear::Saved saved;
        const Tensor y = lin.forward(x, &saved);
        const Tensor dx = lin.backward(tensor_of(*be, ref.at("dy"), DType::bf16), saved);
        ASSERT_EQ(y.dtype(), DType::bf16);
        ASSERT_EQ(dx.dtype(), DType::bf16);
        const std::vector<double> got_y = values_of(*be, y), got_dx = values_of(*be, dx);
        const std::vector<double> got_dw = mt::test::values(lin.weight().grad);
        const Stored &want_y = ref.at(fmt + "_y"), &want_dx = ref.at(fmt + "_dx"),
                     &want_dw = ref.at(fmt + "_dweight");
        for (size_t i = 0; i < got_y.size(); ++i) EXPECT_EQ(got_y[i], want_y.values[i]) << fmt;
        for (size_t i = 0; i < got_dx.size(); ++i) EXPECT_EQ(got_dx[i], want_dx.values[i]) << fmt;
        for (size_t i = 0; i < got_dw.size(); ++i)
            EXPECT_NEAR(got_dw[i], want_dw.values[i], 1e-6 * std::fabs(want_dw.values[i]) + 1e-12)
                << fmt;
    }
}

// --fp8-param-gather: a weight's fp8_main (its f32 main param) is what the GEMMs quantize, not
// its value. Current scaling is scale-free, so a main param of twice the weight doubles y.
TEST(Fp8, LinearQuantizesTheMainParamWhenItHasOne) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("linear.txt");
    mt::nn::Linear lin("l", 16, 12, false, DType::bf16, {}, *be);
    lin.weight().value = tensor_of(*be, ref.at("weight"), DType::bf16);
    lin.use_fp8({true, true});
    EXPECT_TRUE(lin.weight().fp8);
    const Tensor x = tensor_of(*be, ref.at("x"), DType::bf16);
    const std::vector<double> y = values_of(*be, lin.forward(x, nullptr));
    Tensor twice = tensor_of(*be, ref.at("weight"), DType::f32);
    for (int64_t i = 0; i < twice.numel(); ++i) twice.data<float>()[i] *= 2;
    lin.weight().fp8_main = twice;
    const std::vector<double> y2 = values_of(*be, lin.forward(x, nullptr));
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y2[i], 2 * y[i]) << i;
}

// TE's kernel_bulk on one meter: the roll, most_recent against max, the margin, an update with
// no amax (nothing moves), and the scale kept for an infinite amax or made the largest float
// for a tiny one.
TEST(Fp8, DelayedUpdateRollsTheHistoryAndScalesAsTransformerEngine) {
    using mt::nn::Fp8Meter;
    mt::nn::Fp8DelayedRecipe most_recent{3, false, 0}, max{3, true, 1};
    Fp8Meter a{1.0f, {0.0f, 0.0f, 0.0f}}, b = a;
    for (float amax : {8.0f, 4.0f, 2.0f}) {
        a.history[0] = b.history[0] = amax;
        mt::nn::fp8_delayed_update(a, amax, 448.0f, most_recent);
        mt::nn::fp8_delayed_update(b, amax, 448.0f, max);
    }
    EXPECT_EQ(a.history, (std::vector<float>{0.0f, 4.0f, 2.0f}));
    EXPECT_EQ(b.history, a.history);
    EXPECT_EQ(a.scale, 448.0f / 2.0f);  // the newest amax
    // The window counts the slot the last roll dropped (8): 448 * 2^-1 / 8.
    EXPECT_EQ(b.scale, 224.0f / 8.0f);
    Fp8Meter idle = b;
    mt::nn::fp8_delayed_update(idle, 0.0f, 448.0f, max);
    EXPECT_EQ(idle.history, b.history);
    EXPECT_EQ(idle.scale, b.scale);
    Fp8Meter one{5.0f, {0.0f}};
    mt::nn::fp8_delayed_update(one, std::numeric_limits<float>::infinity(), 448.0f, {});
    EXPECT_EQ(one.scale, 5.0f);
    EXPECT_EQ(one.history, std::vector<float>{0.0f});
    mt::nn::fp8_delayed_update(one, 1e-45f, 448.0f, {});
    EXPECT_EQ(one.scale, std::numeric_limits<float>::max());
}

// A bf16 linear under the delayed recipe (hybrid, history 3, max, margin 1): three micro-batches
// in two passes, the meters updated after each forward and backward as fp8_autocast does. Every
// y and dx equals the reference's, dW its f32 sum, the meters its scales.
// With --no-fp8-wgrad (TE's override_linear_precision wgrad) dW is summed from the bf16 x and dy;
// y, dx and the meters are the same.
void expect_delayed_linear(bool wgrad_fp8) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("delayed.txt");
    auto scaling = std::make_shared<mt::nn::Fp8Scaling>(mt::nn::Fp8DelayedRecipe{3, true, 1},
                                                        std::vector<mt::Communicator*>{});
    mt::nn::Linear lin("l", 16, 12, false, DType::bf16, {}, *be);
    lin.weight().grad = be->zeros({12, 16}, DType::f32);
    mt::nn::Fp8Config config;
    config.enabled = true;
    config.recipe = mt::nn::Fp8Recipe::delayed;
    config.wgrad_fp8 = wgrad_fp8;
    config.scaling = scaling;
    lin.use_fp8(config);
    for (int i = 0; i < 3; ++i) {
        const std::string n = std::to_string(i);
        if (i != 1) {  // a pass's first micro-batch; the second pass has a new weight
            lin.weight().value = tensor_of(*be, ref.at(i == 0 ? "weight" : "weight2"), DType::bf16);
            scaling->start_pass();
        }
        mt::nn::Linear::Saved saved;
        const Tensor y = lin.forward(tensor_of(*be, ref.at("x" + n), DType::bf16), &saved);
        scaling->update(true, Fp8Type::e5m2);
        const Tensor dx = lin.backward(tensor_of(*be, ref.at("dy" + n), DType::bf16), saved);
        scaling->update(false, Fp8Type::e5m2);
        const std::vector<double> got_y = values_of(*be, y), got_dx = values_of(*be, dx);
        const Stored &want_y = ref.at("y" + n), &want_dx = ref.at("dx" + n);
        ASSERT_EQ(got_y.size(), want_y.values.size());
        ASSERT_EQ(got_dx.size(), want_dx.values.size());
        for (size_t k = 0; k < got_y.size(); ++k) EXPECT_EQ(got_y[k], want_y.values[k]) << n;
        for (size_t k = 0; k < got_dx.size(); ++k) EXPECT_EQ(got_dx[k], want_dx.values[k]) << n;
    }
    const std::vector<double> got_dw = mt::test::values(lin.weight().grad);
    const Stored& want_dw = ref.at(wgrad_fp8 ? "dweight" : "dweight_high_precision");
    for (size_t k = 0; k < got_dw.size(); ++k)
        EXPECT_NEAR(got_dw[k], want_dw.values[k], 1e-6 * std::fabs(want_dw.values[k]) + 1e-12);
    const mt::nn::Fp8LinearMeters* meters = lin.fp8_meters();
    ASSERT_NE(meters, nullptr);
    for (const auto& [name, meter] : {std::pair{"input", &meters->input},
                                      {"weight", &meters->weight},
                                      {"grad", &meters->grad}}) {
        EXPECT_EQ(meter->scale, float(ref.at(std::string(name) + "_scale").values[0])) << name;
        const Stored& history = ref.at(std::string(name) + "_history");
        ASSERT_EQ(meter->history.size(), history.values.size()) << name;
        for (size_t k = 0; k < history.values.size(); ++k)
            EXPECT_EQ(meter->history[k], float(history.values[k])) << name << " " << k;
    }
}

TEST(Fp8, DelayedScalingLinearMatchesTransformerEngineReference) {
    expect_delayed_linear(true);
}
TEST(Fp8, DelayedScalingLinearWithHighPrecisionWgradMatchesReference) {
    expect_delayed_linear(false);
}

// MXFP8 blocks against TE's CPU reference restated (make_fixtures.py's mxfp8): along rows and
// down columns, E4M3 and E5M2, bit for bit (an all-zero block, a power-of-two amax, subnormals).
TEST(Fp8, MxFp8BlocksEqualTransformerEngineReference) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("mxfp8.txt");
    const Tensor x = tensor_of(*be, ref.at("blocks_in"), DType::f32);
    for (const auto& [name, type] : {std::pair{"e4m3", Fp8Type::e4m3}, {"e5m2", Fp8Type::e5m2}})
        for (const bool down : {false, true}) {
            const std::string key = std::string(name) + (down ? "_columns" : "_rows");
            const std::vector<double> got = mt::test::values(mt::nn::fp8_blocks(
                *be, x, mt::nn::fp8_operand_blocks(mt::nn::Fp8Recipe::mxfp8, type, false, down)));
            const Stored& want = ref.at(key);
            ASSERT_EQ(got.size(), want.values.size()) << key;
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_EQ(float(got[i]), float(want.values[i])) << key << " " << i;
        }
    Tensor odd = be->zeros({32, 48}, DType::f32), y = be->empty({32, 48}, DType::f32);
    EXPECT_THROW(
        be->fp8_quantize_blocks(
            odd, mt::nn::fp8_operand_blocks(mt::nn::Fp8Recipe::mxfp8, Fp8Type::e4m3, false, false),
            y),
        mt::Error);
}

// The blockwise recipe's vectors and tiles against TE's reference restated (make_fixtures.py's
// blockwise): power-of-two scales, whole and partial blocks, bit for bit.
TEST(Fp8, BlockwiseBlocksEqualTransformerEngineReference) {
    auto be = mt::make_cpu_backend();
    const auto ref = fixture("blockwise.txt");
    for (const auto& [name, rows, cols] :
         {std::tuple{"rows", 1, 128}, std::tuple{"columns", 128, 1},
          std::tuple{"tiles", 128, 128}}) {
        const Tensor x = tensor_of(*be, ref.at(std::string(name) + "_in"), DType::f32);
        for (const auto& [type_name, type] :
             {std::pair{"e4m3", Fp8Type::e4m3}, {"e5m2", Fp8Type::e5m2}}) {
            mt::ops::Fp8Blocks blocks;
            blocks.type = type;
            blocks.rows = rows;
            blocks.cols = cols;
            blocks.scale = mt::ops::Fp8Blocks::Scale::power_of_two;
            const std::string key = std::string(name) + "_" + type_name;
            const std::vector<double> got = mt::test::values(mt::nn::fp8_blocks(*be, x, blocks));
            const Stored& want = ref.at(key);
            ASSERT_EQ(got.size(), want.values.size()) << key;
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_EQ(float(got[i]), float(want.values[i])) << key << " " << i;
        }
    }
}

// A bf16 linear (x 32x64, W 32x64, hybrid) under a block-scaled recipe: y, dx and dW equal the
// reference's, each GEMM's operands in the blocks the recipe gives them.
void expect_block_scaled_linear(mt::nn::Fp8Recipe recipe, const char* file) {
    auto be = mt::make_cpu_backend();
    const auto inputs = fixture("mxfp8.txt");
    const auto ref = fixture(file);
    mt::nn::Linear lin("l", 64, 32, false, DType::bf16, {}, *be);
    lin.weight().value = tensor_of(*be, inputs.at("weight"), DType::bf16);
    lin.weight().grad = be->zeros({32, 64}, DType::f32);
    mt::nn::Fp8Config config;
    config.enabled = true;
    config.recipe = recipe;
    lin.use_fp8(config);
    mt::nn::Linear::Saved saved;
    const Tensor y = lin.forward(tensor_of(*be, inputs.at("x"), DType::bf16), &saved);
    const Tensor dx = lin.backward(tensor_of(*be, inputs.at("dy"), DType::bf16), saved);
    const std::vector<double> got_y = values_of(*be, y), got_dx = values_of(*be, dx);
    const std::vector<double> got_dw = mt::test::values(lin.weight().grad);
    const Stored &want_y = ref.at("y"), &want_dx = ref.at("dx"), &want_dw = ref.at("dweight");
    ASSERT_EQ(got_y.size(), want_y.values.size());
    ASSERT_EQ(got_dx.size(), want_dx.values.size());
    for (size_t i = 0; i < got_y.size(); ++i) EXPECT_EQ(got_y[i], want_y.values[i]) << file << i;
    for (size_t i = 0; i < got_dx.size(); ++i) EXPECT_EQ(got_dx[i], want_dx.values[i]) << file << i;
    for (size_t i = 0; i < got_dw.size(); ++i)
        EXPECT_NEAR(got_dw[i], want_dw.values[i], 1e-6 * std::fabs(want_dw.values[i]) + 1e-12)
            << file << i;
}

TEST(Fp8, MxFp8LinearMatchesTransformerEngineReference) {
    expect_block_scaled_linear(mt::nn::Fp8Recipe::mxfp8, "mxfp8.txt");
}
TEST(Fp8, BlockwiseLinearMatchesTransformerEngineReference) {
    expect_block_scaled_linear(mt::nn::Fp8Recipe::blockwise, "blockwise.txt");
}

}  // namespace
