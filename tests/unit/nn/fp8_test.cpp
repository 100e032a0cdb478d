// FP8 emulation (mt/nn/fp8.h): the CPU's cast against PyTorch's float8 casts, TE's saturation and
// scale rules, and a bf16 Linear with FP8 GEMMs against Transformer Engine's reference
// current-scaling quantizer (tests/fixtures/fp8/make_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mt/backend.h"
#include "mt/nn/fp8.h"
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

}  // namespace
