// TransformerLayer: backward against f64 finite differences (GPT-2 style and Llama style, with
// hidden and attention dropout replayed), recompute from a fresh Saved giving identical grads,
// and parameter names in Megatron-core's layout.
#include <gtest/gtest.h>

#include <cmath>

#include "mt/backend.h"
#include "mt/nn/cross_attention.h"
#include "mt/nn/transformer_layer.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::test::random_like;
using mt::test::random_weights;
using mt::test::values;
using mt::test::weights_tensor;

mt::nn::TransformerConfig small_config(bool llama) {
    mt::nn::TransformerConfig c;
    c.hidden_size = 8;
    c.ffn_hidden_size = 12;
    c.num_attention_heads = 4;
    c.num_query_groups = llama ? 2 : 4;
    c.normalization = llama ? mt::nn::NormKind::rms_norm : mt::nn::NormKind::layer_norm;
    c.activation = llama ? mt::ops::UnaryOp::silu : mt::ops::UnaryOp::gelu;
    c.gated_linear_unit = llama;
    c.add_bias_linear = !llama;
    c.rotary = llama;
    c.hidden_dropout = 0.2f;
    c.attention_dropout = 0.2f;
    c.attention_block = 4;
    c.dtype = DType::f64;
    return c;
}

TEST(NnTransformerLayer, GradientsMatchFiniteDifferences) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(21);
    for (bool llama : {false, true}) {
        mt::nn::TransformerLayer layer("decoder.layers.2", small_config(llama),
                                       mt::nn::dense_layer_spec(), *be);
        auto params = mt::test::random_parameters(layer, rng);
        Tensor x = random_like({2, 6, 8}, DType::f64, rng);
        mt::test::expect_module_grads_match(layer, x, params, {true, 77, 5}, rng);
    }
}

// T5's decoder layer: causal self-attention over the decoder's padding, cross-attention over
// the encoder's tokens (padded rows), the MLP; the gradients of the decoder input, of every
// parameter and of the encoder's output (EncoderContext::grad) against finite differences, with
// every dropout replayed.
TEST(NnTransformerLayer, DecoderLayerWithCrossAttentionGradients) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(23);
    mt::nn::TransformerConfig config = small_config(false);
    config.norm_naming = mt::nn::NormNaming::local;
    const mt::nn::LayerSpec spec{{mt::nn::self_attention_sublayer(),
                                  mt::nn::cross_attention_sublayer(),
                                  mt::nn::dense_mlp_sublayer()}};
    mt::nn::TransformerLayer layer("decoder.layers.1", config, spec, *be);
    auto params = mt::test::random_parameters(layer, rng);
    std::vector<std::string> names;
    for (auto* p : params) names.push_back(p->name);
    // Megatron-core's T5 decoder layer (local spec), as its checkpoints list it.
    const std::vector<std::string> want = {"decoder.layers.1.input_layernorm.weight",
                                           "decoder.layers.1.input_layernorm.bias",
                                           "decoder.layers.1.self_attention.linear_proj.weight",
                                           "decoder.layers.1.self_attention.linear_proj.bias",
                                           "decoder.layers.1.self_attention.linear_qkv.weight",
                                           "decoder.layers.1.self_attention.linear_qkv.bias",
                                           "decoder.layers.1.pre_cross_attn_layernorm.weight",
                                           "decoder.layers.1.pre_cross_attn_layernorm.bias",
                                           "decoder.layers.1.cross_attention.linear_proj.weight",
                                           "decoder.layers.1.cross_attention.linear_proj.bias",
                                           "decoder.layers.1.cross_attention.linear_q.weight",
                                           "decoder.layers.1.cross_attention.linear_q.bias",
                                           "decoder.layers.1.cross_attention.linear_kv.weight",
                                           "decoder.layers.1.cross_attention.linear_kv.bias",
                                           "decoder.layers.1.pre_mlp_layernorm.weight",
                                           "decoder.layers.1.pre_mlp_layernorm.bias",
                                           "decoder.layers.1.mlp.linear_fc1.weight",
                                           "decoder.layers.1.mlp.linear_fc1.bias",
                                           "decoder.layers.1.mlp.linear_fc2.weight",
                                           "decoder.layers.1.mlp.linear_fc2.bias"};
    EXPECT_EQ(names, want);

    Tensor x = random_like({2, 5, 8}, DType::f64, rng);
    mt::nn::AttentionMask mask;  // causal over 5 and 3 decoder tokens
    mask.key_length = mt::host_tensor(std::vector<int32_t>{5, 3}, {2});
    Tensor encoder_grad;
    mt::nn::EncoderContext encoder{random_like({2, 7, 8}, DType::f64, rng),
                                   mt::host_tensor(std::vector<int32_t>{7, 4}, {2}), &encoder_grad};
    const mt::nn::DropoutContext start{true, 31, 3};
    mt::nn::DropoutContext ctx = start;
    mt::nn::TransformerLayer::Saved saved;
    Tensor y = layer.forward(x, ctx, &saved, mask, nullptr, 0, &encoder);
    // The padded decoder rows' outputs are unspecified: weigh them 0.
    std::vector<double> w = random_weights(y, rng);
    for (int64_t t = 3; t < 5; ++t)
        for (int64_t h = 0; h < 8; ++h) w[size_t((5 + t) * 8 + h)] = 0.0;
    Tensor dx = layer.backward(weights_tensor(y, w), saved);
    ASSERT_TRUE(encoder_grad.defined());
    auto targets = mt::test::parameter_targets(params);
    targets.insert(targets.begin(), {"x", x, dx});
    targets.insert(targets.begin(), {"encoder", encoder.states, encoder_grad});
    auto run = [&] {
        mt::nn::DropoutContext replay = start;
        return layer.forward(x, replay, nullptr, mask, nullptr, 0, &encoder);
    };
    mt::test::expect_grads_match(run, w, targets, 1e-6, 1e-8, 1e-6);
    // The encoder's padded positions get no gradient: no query sees them.
    for (int64_t t = 4; t < 7; ++t)
        for (int64_t h = 0; h < 8; ++h)
            EXPECT_EQ(mt::test::element(encoder_grad, (7 + t) * 8 + h), 0.0);
}

TEST(NnTransformerLayer, RecomputeReplaysDropoutAndGradsAccumulate) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(22);
    mt::nn::TransformerConfig config = small_config(true);
    config.dtype = DType::f32;
    mt::nn::TransformerLayer layer("decoder.layers.0", config, mt::nn::dense_layer_spec(), *be);
    auto params = mt::test::random_parameters(layer, rng);
    Tensor x = random_like({2, 5, 8}, DType::f32, rng);
    Tensor dy = random_like({2, 5, 8}, DType::f32, rng);
    const mt::nn::DropoutContext start{true, 1234, 0};

    mt::nn::DropoutContext ctx = start;
    mt::nn::TransformerLayer::Saved saved;
    layer.forward(x, ctx, &saved);
    Tensor dx1 = layer.backward(dy, saved);
    std::vector<std::vector<double>> grads1;
    for (auto* p : params) grads1.push_back(values(p->grad));

    // Full recompute: a fresh Saved from the same stream position gives bit-identical grads.
    mt::test::zero_grads(params);
    mt::nn::DropoutContext again = start;
    mt::nn::TransformerLayer::Saved recomputed;
    layer.forward(x, again, &recomputed);
    EXPECT_EQ(again.offset, ctx.offset);
    Tensor dx2 = layer.backward(dy, recomputed);
    EXPECT_EQ(values(dx1), values(dx2));
    for (size_t i = 0; i < params.size(); ++i)
        EXPECT_EQ(values(params[i]->grad), grads1[i]) << params[i]->name;

    // A second backward accumulates (+=) on top.
    layer.backward(dy, recomputed);
    for (size_t i = 0; i < params.size(); ++i) {
        std::vector<double> twice = values(params[i]->grad);
        for (size_t j = 0; j < twice.size(); ++j)
            ASSERT_NEAR(twice[j], 2 * grads1[i][j], 1e-5 * (1 + std::fabs(grads1[i][j])))
                << params[i]->name;
    }
}

// Megatron-core's state-dict order: Transformer Engine lists linear_proj first.
TEST(NnTransformerLayer, ParameterNamesFollowMegatronCore) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerLayer gpt("decoder.layers.3", small_config(false),
                                 mt::nn::dense_layer_spec(), *be);
    std::vector<mt::nn::Parameter*> params;
    gpt.collect_parameters(params);
    std::vector<std::string> names;
    for (auto* p : params) names.push_back(p->name);
    const std::string l = "decoder.layers.3.";
    EXPECT_EQ(names, (std::vector<std::string>{
                         l + "self_attention.linear_proj.weight",
                         l + "self_attention.linear_proj.bias",
                         l + "self_attention.linear_qkv.layer_norm_weight",
                         l + "self_attention.linear_qkv.layer_norm_bias",
                         l + "self_attention.linear_qkv.weight",
                         l + "self_attention.linear_qkv.bias",
                         l + "mlp.linear_fc1.layer_norm_weight",
                         l + "mlp.linear_fc1.layer_norm_bias",
                         l + "mlp.linear_fc1.weight",
                         l + "mlp.linear_fc1.bias",
                         l + "mlp.linear_fc2.weight",
                         l + "mlp.linear_fc2.bias",
                     }));
    EXPECT_EQ(params[4]->shard.kind, mt::ShardSpec::Kind::column);
    EXPECT_EQ(params[0]->shard.kind, mt::ShardSpec::Kind::row);
    EXPECT_FALSE(params[5]->weight_decay);
}

// --softmax-type learnable: the layer's parameters (what is trained, saved and loaded) start
// with core_attention's offsets, registered before linear_proj as in megatron-core; their
// gradient flows through the whole layer.
TEST(NnTransformerLayer, LearnedSoftmaxOffsetsAreTheLayersFirstParameter) {
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig c = small_config(true);
    c.softmax_type = mt::nn::SoftmaxType::learnable;
    mt::nn::TransformerLayer layer("decoder.layers.0", c, mt::nn::dense_layer_spec(), *be);
    std::vector<mt::nn::Parameter*> params;
    layer.collect_parameters(params);
    ASSERT_FALSE(params.empty());
    EXPECT_EQ(params[0]->name, "decoder.layers.0.self_attention.core_attention.softmax_offset");
    EXPECT_EQ(params[0]->value.shape(), mt::Shape({4}));
    EXPECT_FALSE(params[0]->weight_decay);
    EXPECT_EQ(params[1]->name, "decoder.layers.0.self_attention.linear_proj.weight");
    std::mt19937 rng(29);
    auto random = mt::test::random_parameters(layer, rng);
    Tensor x = random_like({2, 6, 8}, DType::f64, rng);
    mt::test::expect_module_grads_match(layer, x, random, {true, 78, 5}, rng);
}

}  // namespace
