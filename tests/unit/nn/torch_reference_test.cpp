// Two small GPT models (embedding -> transformer layer -> output layer + cross-entropy) in f32
// against PyTorch references made by tests/fixtures/nn/make_fixtures.py: a GPT-2 style model
// (LayerNorm, GeLU-tanh, biases, learned positions, tied output) and a Llama style one
// (RMSNorm, SwiGLU, rope, GQA, no biases, untied output). Per-token losses and every
// parameter gradient must match to 1e-5 relative (of the element, or of the tensor's largest
// element for entries near zero).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "mt/backend.h"
#include "mt/nn/embedding.h"
#include "mt/nn/output_loss.h"
#include "mt/nn/transformer_layer.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;

using mt::test::Stored;

std::map<std::string, Stored> load(const std::string& file) {
    return mt::test::load_stored_tensors(mt::test::fixtures_dir() / "nn" / file);
}

Tensor as_tensor(const Stored& s, DType dtype) {
    Tensor t = Tensor::empty(s.shape, dtype);
    for (size_t i = 0; i < s.values.size(); ++i) {
        if (dtype == DType::i64)
            t.data<int64_t>()[i] = int64_t(s.values[i]);
        else
            t.data<float>()[i] = float(s.values[i]);
    }
    return t;
}

void expect_matches(const std::vector<double>& got, const Stored& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.values.size()) << what;
    double scale = 0;
    for (double v : want.values) scale = std::max(scale, std::fabs(v));
    int reported = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double tol = 1e-5 * (std::fabs(want.values[i]) + scale);
        if (!(std::fabs(got[i] - want.values[i]) <= tol) && reported++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs torch " << want.values[i]
                          << " (tolerance " << tol << ")";
    }
}

void check_model(const std::string& file, bool llama) {
    auto ref = load(file);
    const int64_t B = 2, T = 7, H = 16, V = 24;
    auto be = mt::make_cpu_backend();
    mt::nn::TransformerConfig c;
    c.hidden_size = H;
    c.ffn_hidden_size = 24;
    c.num_attention_heads = 4;
    c.num_query_groups = llama ? 2 : 4;
    c.normalization = llama ? mt::nn::NormKind::rms_norm : mt::nn::NormKind::layer_norm;
    c.activation = llama ? mt::ops::UnaryOp::silu : mt::ops::UnaryOp::gelu;
    c.gated_linear_unit = llama;
    c.add_bias_linear = !llama;
    c.rotary = llama;
    c.rotary_percent = 0.5f;
    c.hidden_dropout = 0.0f;
    c.attention_dropout = 0.0f;
    c.attention_block = 3;
    mt::nn::Embedding emb(V, H, llama ? 0 : T + 1, 0.0f, DType::f32, *be);
    mt::nn::TransformerLayer layer("decoder.layers.0", c, mt::nn::dense_layer_spec(), *be);
    mt::nn::OutputLoss head(V, H, llama ? nullptr : &emb.word(), 5, DType::f32, *be);
    std::vector<mt::nn::Parameter*> params;
    emb.collect_parameters(params);
    layer.collect_parameters(params);
    head.collect_parameters(params);
    size_t stored_params = 0;
    for (auto& [name, s] : ref) stored_params += name.rfind("grad.", 0) == 0;
    ASSERT_EQ(params.size(), stored_params);
    for (auto* p : params) {
        ASSERT_TRUE(ref.count(p->name)) << p->name << " is not in " << file;
        ASSERT_EQ(p->value.shape(), ref[p->name].shape) << p->name;
        p->value.copy_from(as_tensor(ref[p->name], DType::f32));
    }

    mt::nn::DropoutContext ctx{true, 0, 0};
    mt::nn::Embedding::Saved emb_saved;
    mt::nn::TransformerLayer::Saved layer_saved;
    mt::nn::OutputLoss::Saved head_saved;
    Tensor ids = as_tensor(ref["ids"], DType::i64);
    Tensor targets = as_tensor(ref["targets"], DType::i64);
    Tensor h0 = emb.forward(ids, ctx, &emb_saved);
    Tensor h1 = layer.forward(h0, ctx, &layer_saved);
    Tensor losses = head.forward(h1, targets, &head_saved);
    expect_matches(mt::test::values(losses), ref["losses"], file + " losses");

    Tensor dh1 = head.backward(as_tensor(ref["loss_weights"], DType::f32), head_saved);
    emb.backward(layer.backward(dh1, layer_saved), emb_saved);
    for (auto* p : params)
        expect_matches(mt::test::values(p->grad), ref["grad." + p->name],
                       file + " grad " + p->name);
    EXPECT_EQ(B * T, losses.numel());
}

TEST(NnTorchReference, Gpt2StyleLayer) {
    check_model("gpt2.txt", false);
}

TEST(NnTorchReference, LlamaStyleLayer) {
    check_model("llama.txt", true);
}

}  // namespace
