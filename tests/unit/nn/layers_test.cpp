// Linear, Embedding, Norm, Mlp and OutputLoss: backward (input and every parameter grad)
// against central finite differences in f64, gradient accumulation across backward calls.
#include <gtest/gtest.h>

#include "mt/backend.h"
#include "mt/nn/embedding.h"
#include "mt/nn/linear.h"
#include "mt/nn/mlp.h"
#include "mt/nn/norm.h"
#include "mt/nn/output_loss.h"
#include "nn_test_util.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::nn::Parameter;
using mt::test::expect_grads_match;
using mt::test::GradTarget;
using mt::test::parameter_targets;
using mt::test::random_like;
using mt::test::random_weights;
using mt::test::values;
using mt::test::weights_tensor;

constexpr double kStep = 1e-6, kAtol = 1e-8, kRtol = 1e-6;

using mt::test::random_parameters;

std::vector<GradTarget> with_input(const Tensor& x, const Tensor& dx,
                                   const std::vector<Parameter*>& params) {
    std::vector<GradTarget> targets = parameter_targets(params);
    targets.insert(targets.begin(), GradTarget{"x", x, dx});
    return targets;
}

TEST(NnLinear, GradientsMatchFiniteDifferences) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(1);
    for (bool bias : {true, false}) {
        mt::nn::Linear lin("decoder.layers.0.mlp.linear_fc1", 5, 3, bias, DType::f64, {}, *be);
        auto params = random_parameters(lin, rng);
        EXPECT_EQ(params.size(), bias ? 2u : 1u);
        EXPECT_EQ(params[0]->name, "decoder.layers.0.mlp.linear_fc1.weight");
        EXPECT_EQ(params[0]->value.shape(), mt::Shape({3, 5}));
        Tensor x = random_like({2, 4, 5}, DType::f64, rng);
        mt::nn::Linear::Saved saved;
        Tensor y = lin.forward(x, &saved);
        ASSERT_EQ(y.shape(), mt::Shape({2, 4, 3}));
        auto w = random_weights(y, rng);
        Tensor dx = lin.backward(weights_tensor(y, w), saved);
        ASSERT_EQ(dx.shape(), x.shape());
        expect_grads_match([&] { return lin.forward(x, nullptr); }, w, with_input(x, dx, params),
                           kStep, kAtol, kRtol);
    }
}

TEST(NnLinear, ForwardIsXWTransposePlusBias) {
    auto be = mt::make_cpu_backend();
    mt::nn::Linear lin("l", 2, 2, true, DType::f32, {}, *be);
    float* wv = lin.weight().value.data<float>();
    wv[0] = 1, wv[1] = 2, wv[2] = 3, wv[3] = 4;  // W = [[1, 2], [3, 4]]
    lin.bias()->value.data<float>()[1] = 10;
    Tensor x = Tensor::empty({1, 2}, DType::f32);
    x.data<float>()[0] = 1, x.data<float>()[1] = 1;
    EXPECT_EQ(values(lin.forward(x, nullptr)), std::vector<double>({3, 17}));
}

TEST(NnLinear, ParameterGradsAccumulateAcrossBackwardCalls) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(2);
    mt::nn::Linear lin("l", 4, 3, true, DType::f64, {}, *be);
    auto params = random_parameters(lin, rng);
    Tensor x = random_like({6, 4}, DType::f64, rng);
    mt::nn::Linear::Saved saved;
    Tensor y = lin.forward(x, &saved);
    Tensor dy = random_like(y.shape(), DType::f64, rng);
    lin.backward(dy, saved);
    std::vector<double> once_w = values(params[0]->grad), once_b = values(params[1]->grad);
    lin.backward(dy, saved);
    std::vector<double> twice_w = values(params[0]->grad), twice_b = values(params[1]->grad);
    for (size_t i = 0; i < once_w.size(); ++i) EXPECT_NEAR(twice_w[i], 2 * once_w[i], 1e-12);
    for (size_t i = 0; i < once_b.size(); ++i) EXPECT_NEAR(twice_b[i], 2 * once_b[i], 1e-12);
}

TEST(NnEmbedding, GradientsMatchFiniteDifferencesWithDropoutReplayed) {
    std::mt19937 rng(3);
    for (int64_t positions : {int64_t(0), int64_t(6)}) {
        mt::nn::Embedding emb(7, 4, positions, 0.25f, DType::f64,
                              mt::single_process_context().backend);
        auto params = random_parameters(emb, rng);
        EXPECT_EQ(params[0]->name, "embedding.word_embeddings.weight");
        if (positions) {
            EXPECT_EQ(params[1]->name, "embedding.position_embeddings.weight");
        }
        Tensor ids = mt::test::random_ids(2, 5, 7, rng);
        const mt::nn::DropoutContext start{true, 42, 1000};
        mt::nn::DropoutContext ctx = start;
        mt::nn::Embedding::Saved saved;
        Tensor y = emb.forward(ids, ctx, &saved);
        EXPECT_EQ(ctx.offset, start.offset + uint64_t(y.numel()));
        auto w = random_weights(y, rng);
        emb.backward(weights_tensor(y, w), saved);
        auto run = [&] {
            mt::nn::DropoutContext c = start;
            return emb.forward(ids, c, nullptr);
        };
        expect_grads_match(run, w, parameter_targets(params), kStep, kAtol, kRtol);
    }
}

TEST(NnEmbedding, EvaluationSkipsDropout) {
    std::mt19937 rng(4);
    mt::nn::Embedding emb(5, 3, 0, 0.5f, DType::f32, mt::single_process_context().backend);
    random_parameters(emb, rng);
    Tensor ids = mt::test::random_ids(1, 4, 5, rng);
    mt::nn::DropoutContext ctx{false, 1, 0};
    Tensor y = emb.forward(ids, ctx, nullptr);
    EXPECT_EQ(ctx.offset, 0u);
    for (int64_t t = 0; t < 4; ++t)
        for (int64_t j = 0; j < 3; ++j)
            EXPECT_EQ(y.data<float>()[t * 3 + j],
                      emb.word().value.data<float>()[ids.data<int64_t>()[t] * 3 + j]);
}

TEST(NnNorm, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(5);
    for (auto kind : {mt::nn::NormKind::layer_norm, mt::nn::NormKind::rms_norm})
        for (bool one_p : {false, true}) {
            mt::ops::NormConfig config;
            config.zero_centered_gamma = one_p;
            mt::nn::Norm norm(kind, "n.layer_norm_weight", "n.layer_norm_bias", 6, config,
                              DType::f64, mt::single_process_context().backend);
            auto params = random_parameters(norm, rng);
            EXPECT_EQ(params.size(), kind == mt::nn::NormKind::layer_norm ? 2u : 1u);
            EXPECT_FALSE(params[0]->weight_decay);
            Tensor x = random_like({3, 2, 6}, DType::f64, rng);
            mt::nn::Norm::Saved saved;
            Tensor y = norm.forward(x, &saved);
            auto w = random_weights(y, rng);
            Tensor dx = norm.backward(weights_tensor(y, w), saved);
            expect_grads_match([&] { return norm.forward(x, nullptr); }, w,
                               with_input(x, dx, params), kStep, kAtol, kRtol);
        }
}

TEST(NnMlp, GradientsMatchFiniteDifferences) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(6);
    // GeLU, SwiGLU and quick GeGLU with --glu-linear-offset and --activation-func-clamp-value.
    for (const auto act :
         {mt::ops::UnaryOp::gelu, mt::ops::UnaryOp::silu, mt::ops::UnaryOp::quick_gelu})
        for (bool bias : {true, false}) {
            const bool swiglu = act != mt::ops::UnaryOp::gelu;  // gated
            mt::nn::TransformerConfig config;
            config.hidden_size = 6;
            config.ffn_hidden_size = 10;
            config.gated_linear_unit = swiglu;
            config.activation = act;
            if (act == mt::ops::UnaryOp::quick_gelu) {
                config.glu_linear_offset = 1.0f;
                config.activation_clamp = 7.0f;
            }
            config.add_bias_linear = bias;
            config.dtype = DType::f64;
            mt::nn::Mlp mlp("decoder.layers.1.mlp", config, *be);
            auto params = random_parameters(mlp, rng);
            EXPECT_EQ(params[0]->name, "decoder.layers.1.mlp.linear_fc1.weight");
            EXPECT_EQ(params[0]->value.shape(), mt::Shape({swiglu ? 20 : 10, 6}));
            Tensor x = random_like({2, 3, 6}, DType::f64, rng);
            mt::nn::Mlp::Saved saved;
            Tensor y = mlp.forward(x, &saved);
            auto w = random_weights(y, rng);
            Tensor dx = mlp.backward(weights_tensor(y, w), saved);
            expect_grads_match([&] { return mlp.forward(x, nullptr); }, w,
                               with_input(x, dx, params), kStep, kAtol, kRtol);
        }
}

TEST(NnOutputLoss, GradientsMatchFiniteDifferencesAcrossChunks) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(7);
    // Ten rows: recomputed in chunks of 1 or 4 (kept only up to 1, 4 or 3 rows), or the forward's
    // logits kept (one chunk of 100, or kept up to 100 rows with chunks of 1).
    using Rows = mt::nn::OutputLoss::LogitRows;
    for (Rows rows : {Rows(1), Rows(4), Rows(4, 3), Rows(100), Rows(1, 100)}) {
        mt::nn::OutputLoss head(9, 5, nullptr, rows, DType::f64, *be);
        auto params = random_parameters(head, rng);
        EXPECT_EQ(params[0]->name, "output_layer.weight");
        Tensor h = random_like({2, 5, 5}, DType::f64, rng);
        Tensor targets = mt::test::random_ids(2, 5, 9, rng);
        mt::nn::OutputLoss::Saved saved;
        Tensor losses = head.forward(h, targets, &saved);
        ASSERT_EQ(losses.shape(), mt::Shape({2, 5}));
        EXPECT_EQ(saved.logits.defined(), rows.kept >= 10) << rows.chunk << " " << rows.kept;
        auto w = random_weights(losses, rng);
        Tensor dh = head.backward(weights_tensor(losses, w), saved);
        expect_grads_match([&] { return head.forward(h, targets, nullptr); }, w,
                           with_input(h, dh, params), kStep, kAtol, kRtol);
    }
}

TEST(NnOutputLoss, TiedWeightAccumulatesIntoTheEmbedding) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(8);
    mt::nn::Embedding emb(9, 4, 0, 0.0f, DType::f64, *be);
    random_parameters(emb, rng);
    mt::nn::OutputLoss head(9, 4, &emb.word(), 3, DType::f64, *be);
    std::vector<Parameter*> own;
    head.collect_parameters(own);
    EXPECT_TRUE(own.empty());
    Tensor h = random_like({1, 4, 4}, DType::f64, rng);
    Tensor targets = mt::test::random_ids(1, 4, 9, rng);
    mt::nn::OutputLoss::Saved saved;
    Tensor losses = head.forward(h, targets, &saved);
    auto w = random_weights(losses, rng);
    head.backward(weights_tensor(losses, w), saved);
    expect_grads_match([&] { return head.forward(h, targets, nullptr); }, w,
                       {{"word", emb.word().value, emb.word().grad}}, kStep, kAtol, kRtol);
}

}  // namespace
