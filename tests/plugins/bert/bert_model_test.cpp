// BertModel: the masked-LM and sentence-order losses and every gradient against Hugging Face's
// MegatronBertForPreTraining (Megatron's BERT) and BertForPreTraining (the original post-
// LayerNorm BERT, Megatron's --apply-residual-connection-post-layernorm with the norms shifted
// by one; tests/fixtures/bert/make_bert_fixtures.py), the
// finetuning heads (classification, multiple choice) against finite differences, and the
// family's parameter list against the model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "bert_model.h"
#include "formula_weights.h"
#include "model_reference.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::bert {
namespace {

using mt::test::element;
using mt::test::set_element;

Tensor i64(const std::vector<double>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::i64);
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = int64_t(values[i]);
    return t;
}

Tensor f64(const std::vector<double>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::f64);
    std::copy(values.begin(), values.end(), t.data<double>());
    return t;
}

// The losses of every position and sample, and every gradient, against transformers' run.
void check_against_transformers(const std::string& file) {
    const auto ref = mt::test::load_model_reference("bert/" + file);
    const int64_t B = 2, T = 16;
    BertModel model(bert_config_from_args(ref.args), single_process_context(), DType::f64);
    const auto params = model.parameters();
    for (auto* p : params) mt::test::fill_formula_weight(*p);
    const auto& v = ref.vectors;
    std::vector<double> ones(size_t(B * T), 1.0);
    Batch batch = {{"text", i64(v.at("text"), {B, T})},
                   {"types", i64(v.at("types"), {B, T})},
                   {"padding_mask", i64(v.at("padding_mask"), {B, T})},
                   {"labels", i64(v.at("labels"), {B, T})},
                   {"loss_mask", i64(ones, {B, T})},
                   {"is_random", i64(v.at("is_random"), {B})}};
    nn::DropoutContext ctx{true, 0, 0};
    std::unique_ptr<Activations> saved;
    const Losses losses = model.forward(batch, ctx, &saved);
    ASSERT_EQ(losses.size(), 2u);
    EXPECT_EQ(losses[0].name, "lm loss");
    EXPECT_EQ(losses[1].name, "sop loss");
    EXPECT_EQ(losses[0].reporting, LossTerm::Reporting::micro_batch_mean);
    for (int64_t i = 0; i < B * T; ++i)  // every position, padded ones included
        EXPECT_TRUE(
            mt::test::close_to(element(losses[0].values, i), v.at("lm_losses")[size_t(i)], 0, 1e-9))
            << "lm loss " << i << ": " << element(losses[0].values, i) << " vs transformers "
            << v.at("lm_losses")[size_t(i)];
    for (int64_t b = 0; b < B; ++b)
        EXPECT_TRUE(mt::test::close_to(element(losses[1].values, b), v.at("sop_losses")[size_t(b)],
                                       0, 1e-9))
            << "sop loss " << b;
    model.backward({f64(v.at("lm_weights"), {B, T}), f64(v.at("sop_weights"), {B})}, *saved);
    mt::test::expect_grads_match_reference(params, ref, file, 1e-7);
}

TEST(BertModel, MatchesHuggingFaceMegatronBert) {
    check_against_transformers("bert_pretraining.txt");
}

// --apply-residual-connection-post-layernorm: the original BERT (transformers'
// BertForPreTraining).
TEST(BertModel, ResidualAfterTheNormIsHuggingFacesPostLayerNormBert) {
    check_against_transformers("bert_post_ln_pretraining.txt");
}

ModelArgs tiny_args() {
    return {{"num-layers", "2"},          {"hidden-size", "16"},
            {"num-attention-heads", "2"}, {"seq-length", "6"},
            {"vocab-size", "40"},         {"max-position-embeddings", "6"},
            {"hidden-dropout", "0.2"},    {"attention-dropout", "0.1"}};
}

// Σ w · (the task loss) against central differences of the f64 model, dropout replayed.
void check_task_head(ModelArgs args, const Shape& text_shape) {
    BertModel model(bert_config_from_args(args), single_process_context(), DType::f64);
    model.initialize(5);
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> uniform(-0.5, 0.5);
    for (auto* p : model.parameters())  // larger weights so every path shows
        for (int64_t i = 0; i < p->value.numel(); ++i)
            set_element(p->value, i, element(p->value, i) * 10 + uniform(rng));
    const int64_t n = shape_numel(text_shape), T = text_shape.back();
    const int64_t B = text_shape[0];
    std::vector<double> text, types, padding, labels;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = i % T, row = i / T;
        const int64_t length = T - row % 3;  // some rows padded
        text.push_back(double(5 + (i * 7) % 30));
        types.push_back(t >= length / 2 ? 1 : 0);
        padding.push_back(t < length ? 1 : 0);
    }
    const int64_t classes =
        args.count("num-classes") ? std::stoll(args.at("num-classes")) : text_shape[1];
    for (int64_t b = 0; b < B; ++b) labels.push_back(double((b * 5 + 1) % classes));
    Batch batch = {{"text", i64(text, text_shape)},
                   {"types", i64(types, text_shape)},
                   {"padding_mask", i64(padding, text_shape)},
                   {"label", i64(labels, {B})}};
    std::vector<double> w;
    for (int64_t b = 0; b < B; ++b) w.push_back(0.5 + 0.25 * double(b));
    auto objective = [&] {
        nn::DropoutContext ctx{true, 9, 0};
        const Losses l = model.forward(batch, ctx, nullptr);
        double sum = 0;
        for (int64_t b = 0; b < B; ++b) sum += w[size_t(b)] * element(l[0].values, b);
        return sum;
    };
    nn::DropoutContext ctx{true, 9, 0};
    std::unique_ptr<Activations> saved;
    const Losses losses = model.forward(batch, ctx, &saved);
    ASSERT_EQ(losses.size(), 1u);
    EXPECT_EQ(losses[0].name, "lm loss");
    model.backward({f64(w, {B})}, *saved);
    // The loss is the cross-entropy of predict()'s logits (dropout off there).
    const Tensor logits = model.predict(batch);
    EXPECT_EQ(logits.shape(), (Shape{B, classes}));
    const double h = 1e-5;
    for (auto* p : model.parameters()) {
        const int64_t count = p->value.numel(), step = std::max<int64_t>(1, count / 25);
        for (int64_t i = 0; i < count; i += step) {
            const double v = element(p->value, i);
            set_element(p->value, i, v + h);
            const double up = objective();
            set_element(p->value, i, v - h);
            const double down = objective();
            set_element(p->value, i, v);
            const double numeric = (up - down) / (2 * h);
            EXPECT_NEAR(element(p->grad, i), numeric, 1e-6 * (1 + std::fabs(numeric)))
                << p->name << "[" << i << "]";
        }
    }
}

TEST(BertModel, ClassificationHeadGradients) {
    ModelArgs args = tiny_args();
    args["task-head"] = "classification";
    args["num-classes"] = "3";
    check_task_head(args, {4, 6});
}

TEST(BertModel, MultipleChoiceHeadGradients) {
    ModelArgs args = tiny_args();
    args["task-head"] = "multichoice";
    check_task_head(args, {2, 4, 6});
}

TEST(BertModel, FamilyListsTheModelsParametersInMegatronsOrder) {
    Registry registry;
    register_bert(registry);
    auto family = registry.create_model("bert");
    ModelArgs args = tiny_args();
    const auto infos = family->parameters(args);
    ASSERT_GE(infos.size(), 6u);
    EXPECT_EQ(infos[0].name, "embedding.word_embeddings.weight");
    EXPECT_EQ(infos[2].name, "embedding.tokentype_embeddings.weight");
    EXPECT_EQ(infos[3].name, "encoder.layers.0.self_attention.linear_proj.weight");
    std::vector<std::string> tail;
    for (size_t i = infos.size() - 11; i < infos.size(); ++i) tail.push_back(infos[i].name);
    EXPECT_EQ(tail, (std::vector<std::string>{
                        "encoder.final_layernorm.weight", "encoder.final_layernorm.bias",
                        "lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                        "lm_head.layer_norm.bias", "output_layer.bias", "binary_head.weight",
                        "binary_head.bias", "pooler.dense.weight", "pooler.dense.bias"}));
    // Without the binary head: no pooler, no token types.
    args["bert-no-binary-head"] = "";
    const auto plain = family->parameters(args);
    EXPECT_EQ(plain[2].name, "encoder.layers.0.self_attention.linear_proj.weight");
    EXPECT_EQ(plain.back().name, "output_layer.bias");
}

TEST(BertModel, RefusesWhatItCannotDo) {
    EXPECT_NE(mt::test::error_of([] {
                  ModelArgs a = tiny_args();
                  a["task-head"] = "regression";
                  bert_config_from_args(a);
              }).find("unknown BERT task head \"regression\""),
              std::string::npos);
    // DeepSeek's features are built for GPT models (Megatron's BERT specs have neither).
    EXPECT_NE(mt::test::error_of([] {
                  ModelArgs a = tiny_args();
                  a["position-embedding-type"] = "rope";
                  a["mtp-num-layers"] = "1";
                  bert_config_from_args(a);
              }).find("not supported yet: --mtp-num-layers for BERT"),
              std::string::npos);
    BertModel model(bert_config_from_args(tiny_args()), single_process_context());
    nn::DropoutContext ctx{false, 0, 0};
    Batch batch = {{"text", i64(std::vector<double>(6, 7.0), {1, 6})},
                   {"types", i64(std::vector<double>(6, 0.0), {1, 6})},
                   {"padding_mask", i64({1, 1, 0, 1, 0, 0}, {1, 6})}};
    EXPECT_NE(mt::test::error_of([&] {
                  model.forward(batch, ctx, nullptr);
              }).find("padding other than at the end of a row"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] { model.predict(batch); }).find("need a task head"),
              std::string::npos);
}

}  // namespace
}  // namespace mt::plugins::bert
