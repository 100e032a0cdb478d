// bf16 through the backend ops (--bf16 training): casts round to nearest even; the ops take bf16
// activations, compute in f32 and round their outputs, keep f32 statistics, losses and
// parameter grads; the GEMM multiplies bf16 operands into an f32 or bf16 C.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend_test.h"
#include "kernel_test_util.h"
#include "mt/kernels/bf16.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;

// `t` (f32) rounded to bf16, and that bf16 tensor widened back (the values a bf16 run sees).
Tensor to_bf16(mt::Backend& be, const Tensor& t) {
    Tensor out = be.empty(t.shape(), DType::bf16);
    be.cast(t, out);
    return out;
}
Tensor to_f32(mt::Backend& be, const Tensor& t) {
    Tensor out = be.empty(t.shape(), DType::f32);
    be.cast(t, out);
    return out;
}

class Bf16Ops : public mt::test::BackendTest {};

TEST_P(Bf16Ops, CastRoundsToNearestEvenAndKeepsSpecials) {
    const float values[] = {1.0f,
                            1.00390625f /* tie: stays 1 */,
                            1.01171875f /* tie: up */,
                            -3.14159f,
                            1e-40f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            3.4e38f};
    Tensor x = Tensor::empty({8}, DType::f32);
    for (int i = 0; i < 8; ++i) x.data<float>()[i] = values[i];
    Tensor back = to_f32(be(), to_bf16(be(), x));
    for (int i = 0; i < 8; ++i) {
        const float want = mt::k::bf16_to_float(mt::k::float_to_bf16(values[i]));
        if (std::isnan(values[i]))
            EXPECT_TRUE(std::isnan(back.data<float>()[i]));
        else
            EXPECT_EQ(back.data<float>()[i], want) << values[i];
    }
    EXPECT_EQ(back.data<float>()[1], 1.0f);
    EXPECT_EQ(back.data<float>()[2], 1.015625f);
    Tensor ones = be().empty({3}, DType::bf16);
    be().fill(ones, 1.5);
    EXPECT_EQ(to_f32(be(), ones).data<float>()[2], 1.5f);
}

// Each op on bf16 inputs equals the f32 op on their widened values, rounded to bf16.
TEST_P(Bf16Ops, ElementwiseOpsComputeInF32AndRound) {
    std::mt19937 rng(41);
    Tensor x16 = to_bf16(be(), mt::test::random_tensor({4, 10}, rng, -3, 3));
    Tensor dy16 = to_bf16(be(), mt::test::random_tensor({4, 10}, rng));
    Tensor x = to_f32(be(), x16), dy = to_f32(be(), dy16);
    for (auto op : {mt::ops::UnaryOp::gelu, mt::ops::UnaryOp::silu}) {
        Tensor y16 = be().empty(x.shape(), DType::bf16), y = be().empty(x.shape(), DType::f32);
        be().unary_forward(op, x16, y16);
        be().unary_forward(op, x, y);
        Tensor dx16 = be().empty(x.shape(), DType::bf16), dx = be().empty(x.shape(), DType::f32);
        be().unary_backward(op, x16, dy16, dx16);
        be().unary_backward(op, x, dy, dx);
        EXPECT_EQ(mt::test::to_doubles(to_f32(be(), y16)),
                  mt::test::to_doubles(to_f32(be(), to_bf16(be(), y))));
        EXPECT_EQ(mt::test::to_doubles(to_f32(be(), dx16)),
                  mt::test::to_doubles(to_f32(be(), to_bf16(be(), dx))));
    }
}

// The residual add, dropout and bias on bf16 rows, and bf16 bias gradients summed into an f32
// main grad, equal the f32 ops on the same values (rounded where the output is bf16).
TEST_P(Bf16Ops, AddDropoutAndBiasWithoutWidening) {
    std::mt19937 rng(44);
    Tensor a16 = to_bf16(be(), mt::test::random_tensor({6, 16}, rng));
    Tensor b16 = to_bf16(be(), mt::test::random_tensor({16}, rng));
    Tensor a = to_f32(be(), a16), b = to_f32(be(), b16);
    auto rounded = [&](const Tensor& t) {
        return mt::test::to_doubles(to_f32(be(), to_bf16(be(), t)));
    };
    Tensor s16 = be().empty(a.shape(), DType::bf16), s = be().empty(a.shape(), DType::f32);
    be().add(a16, a16, s16);
    be().add(a, a, s);
    EXPECT_EQ(mt::test::to_doubles(to_f32(be(), s16)), rounded(s));
    be().dropout_forward(a16, 0.3f, 5, 11, s16);
    be().dropout_forward(a, 0.3f, 5, 11, s);
    EXPECT_EQ(mt::test::to_doubles(to_f32(be(), s16)), rounded(s));
    be().add_bias(b16, a16);
    be().add_bias(b, a);
    EXPECT_EQ(mt::test::to_doubles(to_f32(be(), a16)), rounded(a));
    Tensor db = be().zeros({16}, DType::f32), db32 = be().zeros({16}, DType::f32);
    be().add_column_sums(a16, db);
    be().add_column_sums(to_f32(be(), a16), db32);
    EXPECT_EQ(mt::test::to_doubles(db), mt::test::to_doubles(db32));
}

// Cross-entropy of bf16 logits: f32 losses and lse, bf16 dlogits (in place over the logits, as
// the output layer runs it), equal to the f32 op on the same values.
TEST_P(Bf16Ops, CrossEntropyOfBf16LogitsInF32) {
    std::mt19937 rng(45);
    const int64_t rows = 5, vocab = 37;
    Tensor logits16 = to_bf16(be(), mt::test::random_tensor({rows, vocab}, rng, -4, 4));
    Tensor targets = Tensor::empty({rows}, DType::i64);
    for (int64_t r = 0; r < rows; ++r) targets.data<int64_t>()[r] = (7 * r + 3) % vocab;
    Tensor losses = be().empty({rows}, DType::f32), lse = be().empty({rows}, DType::f32);
    be().cross_entropy_forward(logits16, targets, losses, lse);
    Tensor logits = to_f32(be(), logits16);
    Tensor losses32 = be().empty({rows}, DType::f32), lse32 = be().empty({rows}, DType::f32);
    be().cross_entropy_forward(logits, targets, losses32, lse32);
    EXPECT_EQ(mt::test::to_doubles(losses), mt::test::to_doubles(losses32));
    Tensor dl = mt::test::random_tensor({rows}, rng);
    be().cross_entropy_backward(logits, targets, lse32, dl, logits);
    be().cross_entropy_backward(logits16, targets, lse, dl, logits16);  // in place
    EXPECT_EQ(mt::test::to_doubles(to_f32(be(), logits16)),
              mt::test::to_doubles(to_f32(be(), to_bf16(be(), logits))));
}

// LayerNorm of bf16 rows: f32 statistics, bf16 output, f32 parameter grads accumulated.
TEST_P(Bf16Ops, LayerNormKeepsF32StatisticsAndGrads) {
    std::mt19937 rng(42);
    const int64_t rows = 6, C = 24;
    Tensor x16 = to_bf16(be(), mt::test::random_tensor({rows, C}, rng, -2, 2));
    Tensor w16 = to_bf16(be(), mt::test::random_tensor({C}, rng, 0.5f, 1.5f));
    Tensor b16 = to_bf16(be(), mt::test::random_tensor({C}, rng));
    Tensor y16 = be().empty({rows, C}, DType::bf16);
    Tensor mean = be().empty({rows}, DType::f32), rstd = be().empty({rows}, DType::f32);
    be().layer_norm_forward(x16, w16, b16, {}, y16, mean, rstd);
    Tensor x = to_f32(be(), x16), w = to_f32(be(), w16), b = to_f32(be(), b16);
    Tensor y = be().empty({rows, C}, DType::f32);
    Tensor mean32 = be().empty({rows}, DType::f32), rstd32 = be().empty({rows}, DType::f32);
    be().layer_norm_forward(x, w, b, {}, y, mean32, rstd32);
    EXPECT_EQ(mt::test::to_doubles(rstd), mt::test::to_doubles(rstd32));
    EXPECT_EQ(mt::test::to_doubles(to_f32(be(), y16)),
              mt::test::to_doubles(to_f32(be(), to_bf16(be(), y))));

    Tensor dy16 = to_bf16(be(), mt::test::random_tensor({rows, C}, rng));
    Tensor dx16 = be().empty({rows, C}, DType::bf16);
    Tensor dw = be().zeros({C}, DType::f32), db = be().zeros({C}, DType::f32);
    be().layer_norm_backward(dy16, x16, w16, mean, rstd, {}, dx16, dw, db);
    Tensor dx = be().empty({rows, C}, DType::f32);
    Tensor dw32 = be().zeros({C}, DType::f32), db32 = be().zeros({C}, DType::f32);
    be().layer_norm_backward(to_f32(be(), dy16), x, w, mean32, rstd32, {}, dx, dw32, db32);
    EXPECT_EQ(mt::test::to_doubles(dw), mt::test::to_doubles(dw32));
    EXPECT_EQ(mt::test::to_doubles(db), mt::test::to_doubles(db32));
}

// C (f32, accumulating, the weight-gradient GEMM) += A^T B of bf16 operands, against double.
TEST_P(Bf16Ops, GemmAccumulatesBf16ProductsInF32) {
    std::mt19937 rng(43);
    const int64_t m = 19, n = 13, k = 37;
    Tensor a = to_bf16(be(), mt::test::random_tensor({k, m}, rng));
    Tensor b = to_bf16(be(), mt::test::random_tensor({k, n}, rng));
    Tensor c0 = mt::test::random_tensor({m, n}, rng);
    Tensor c = be().empty({m, n}, DType::f32);
    be().copy(c0, c);
    be().gemm(mt::Transpose::yes, mt::Transpose::no, 1.0f, a, b, 1.0f, c);
    Tensor af = to_f32(be(), a), bf = to_f32(be(), b);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double want = c0.data<float>()[i * n + j];
            for (int64_t p = 0; p < k; ++p)
                want += double(af.data<float>()[p * m + i]) * bf.data<float>()[p * n + j];
            EXPECT_NEAR(c.data<float>()[i * n + j], want, 1e-5) << i << "," << j;
        }
}

}  // namespace

MT_INSTANTIATE_BACKENDS(Bf16Ops);
