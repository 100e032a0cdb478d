// GptModel: its parameters are the family's list one to one (both --transformer-impl
// namings), the whole model's backward equals central finite differences in f64 (with dropout
// replayed), the f32 model equals a PyTorch reference of Megatron's GPT (losses and gradients,
// tests/fixtures/gpt/make_model_fixtures.py), and Megatron's initialisation scheme.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "formula_weights.h"
#include "gpt_model.h"
#include "hybrid_args.h"
#include "model_reference.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/mla_attention.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"
#include "tiny_model_args.h"

namespace mt::plugins::gpt {
namespace {

ModelArgs odd_args() {
    ModelArgs a = gpt2_args();
    a["num-layers"] = "1";
    a["kv-channels"] = "6";
    a["ffn-hidden-size"] = "20";
    a["disable-bias-linear"] = "";
    a["add-qkv-bias"] = "";
    a["position-embedding-type"] = "none";
    a["apply-layernorm-1p"] = "";
    return a;
}

Tensor i64_tensor(const std::vector<int64_t>& v, int64_t B, int64_t T) {
    Tensor t = Tensor::empty({B, T}, DType::i64);
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
}

Tensor positions(int64_t B, int64_t T) {
    std::vector<int64_t> v;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) v.push_back(t);
    return i64_tensor(v, B, T);
}

using mt::test::element;
using mt::test::fill_formula_weight;
using mt::test::set_element;

TEST(GptModel, ParametersAreTheFamilysListOneToOne) {
    Registry registry;
    register_gpt(registry);
    auto family = registry.create_model("gpt");
    for (const ModelArgs& base : {gpt2_args(), llama_args(), odd_args()}) {
        for (const char* impl : {"local", "transformer_engine"}) {
            const ModelArgs args = with(base, "transformer-impl", impl);
            GptModel model(nn::read_transformer_args(args));
            const auto params = model.parameters();
            const auto infos = family->parameters(args);
            ASSERT_EQ(params.size(), infos.size()) << impl;
            std::set<const nn::Parameter*> distinct(params.begin(), params.end());
            EXPECT_EQ(distinct.size(), params.size());
            for (size_t i = 0; i < params.size(); ++i) {
                const auto& p = *params[i];
                const auto& info = infos[i];
                EXPECT_EQ(p.name, info.name) << impl << " entry " << i;
                EXPECT_EQ(p.value.shape(), info.shape) << info.name;
                EXPECT_EQ(p.grad.shape(), info.shape) << info.name;
                EXPECT_EQ(p.value.dtype(), info.dtype) << info.name;
                EXPECT_TRUE(p.shard == info.shard) << info.name;
                EXPECT_EQ(p.whole_shape, info.shape) << info.name;
                EXPECT_EQ(p.weight_decay, info.weight_decay) << info.name;
            }
        }
    }
}

TEST(GptModel, TransformerEngineNamesInRegistrationOrder) {
    GptModel model(nn::read_transformer_args(gpt2_args()));  // transformer_engine is the default
    std::vector<std::string> names;
    for (auto* p : model.parameters())
        if (p->name.starts_with("decoder.layers.0.")) names.push_back(p->name.substr(17));
    const std::vector<std::string> want = {"self_attention.linear_proj.weight",
                                           "self_attention.linear_proj.bias",
                                           "self_attention.linear_qkv.layer_norm_weight",
                                           "self_attention.linear_qkv.layer_norm_bias",
                                           "self_attention.linear_qkv.weight",
                                           "self_attention.linear_qkv.bias",
                                           "mlp.linear_fc1.layer_norm_weight",
                                           "mlp.linear_fc1.layer_norm_bias",
                                           "mlp.linear_fc1.weight",
                                           "mlp.linear_fc1.bias",
                                           "mlp.linear_fc2.weight",
                                           "mlp.linear_fc2.bias"};
    EXPECT_EQ(names, want);
    auto error = mt::test::error_of(
        [] { nn::read_transformer_args(with(gpt2_args(), "transformer-impl", "fast")); });
    EXPECT_NE(error.find("--transformer-impl fast"), std::string::npos) << error;
}

// L = sum_j (j + 1) sum w[b, t] loss_j[b, t] over the loss terms j (the model's, then any
// multi-token prediction depth's) for the f64 model, replaying the same dropout masks every call.
struct Objective {
    GptModel& model;
    Batch batch;
    std::vector<double> w;
    double operator()() {
        nn::DropoutContext ctx{true, 7, 0};
        double sum = 0;
        const Losses terms = model.forward(batch, ctx, nullptr);
        for (size_t j = 0; j < terms.size(); ++j)
            for (int64_t i = 0; i < terms[j].values.numel(); ++i)
                sum += double(j + 1) * w[size_t(i)] * element(terms[j].values, i);
        return sum;
    }
};

// With `documents`, each row holds two documents: position ids restart and attention stops at
// the second one's start (--reset-position-ids, --reset-attention-mask). step: the central
// differences' step.
void check_finite_differences(const ModelArgs& args, bool documents = false, double step = 1e-5) {
    GptModel model(nn::read_transformer_args(args), DType::f64);
    model.initialize(3);
    // Larger weights than Megatron's 0.02 so every path contributes visibly.
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> uniform(-0.5, 0.5);
    for (auto* p : model.parameters())
        for (int64_t i = 0; i < p->value.numel(); ++i)
            set_element(p->value, i,
                        element(p->value, i) * 10 + (p->value.dim() == 1 ? uniform(rng) : 0));
    const int64_t B = 2, T = 5, V = 50;
    std::uniform_int_distribution<int64_t> token(0, V - 1);
    std::vector<int64_t> tokens, labels;
    for (int64_t i = 0; i < B * T; ++i) {
        tokens.push_back(token(rng));
        labels.push_back(token(rng));
    }
    Objective objective{model,
                        {{"tokens", i64_tensor(tokens, B, T)},
                         {"labels", i64_tensor(labels, B, T)},
                         {"position_ids", positions(B, T)}},
                        {}};
    if (documents) {
        objective.batch["position_ids"] = i64_tensor({0, 1, 0, 1, 2, 0, 1, 2, 0, 1}, B, T);
        Tensor starts = Tensor::empty({B, T}, DType::i32);
        const int32_t s[] = {0, 0, 2, 2, 2, 0, 0, 0, 3, 3};
        std::copy(s, s + B * T, starts.data<int32_t>());
        objective.batch["document_start"] = starts;
    }
    for (int64_t i = 0; i < B * T; ++i) objective.w.push_back(uniform(rng) + 1.0);

    nn::DropoutContext ctx{true, 7, 0};
    std::unique_ptr<Activations> saved;
    const size_t terms = model.forward(objective.batch, ctx, &saved).size();
    std::vector<Tensor> dterms;
    for (size_t j = 0; j < terms; ++j) {
        Tensor d = Tensor::empty({B, T}, DType::f64);
        for (int64_t i = 0; i < B * T; ++i)
            d.data<double>()[i] = double(j + 1) * objective.w[size_t(i)];
        dterms.push_back(d);
    }
    model.backward(dterms, *saved);

    const double h = step;
    for (auto* p : model.parameters()) {
        double scale = 0;
        for (int64_t i = 0; i < p->grad.numel(); ++i)
            scale = std::max(scale, std::fabs(element(p->grad, i)));
        // Every element of small parameters; a spread of 40 of the large ones.
        const int64_t n = p->value.numel(), step = std::max<int64_t>(1, n / 40);
        for (int64_t i = 0; i < n; i += step) {
            const double v = element(p->value, i);
            set_element(p->value, i, v + h);
            const double up = objective();
            set_element(p->value, i, v - h);
            const double down = objective();
            set_element(p->value, i, v);
            const double numeric = (up - down) / (2 * h), analytic = element(p->grad, i);
            EXPECT_NEAR(analytic, numeric, 1e-6 * (1 + scale) + 1e-5 * std::fabs(numeric))
                << p->name << "[" << i << "]";
        }
    }
}

TEST(GptModel, BackwardMatchesFiniteDifferencesGpt2Style) {
    check_finite_differences(
        with(with(gpt2_args(), "hidden-dropout", "0.2"), "attention-dropout", "0.2"));
}

TEST(GptModel, BackwardMatchesFiniteDifferencesLlamaStyle) {
    check_finite_differences(with(llama_args(), "hidden-dropout", "0.2"));
}

TEST(GptModel, BackwardMatchesFiniteDifferencesWithDocumentResets) {
    check_finite_differences(with(gpt2_args(), "hidden-dropout", "0.2"), /*documents=*/true);
    check_finite_differences(llama_args(), /*documents=*/true);
}

// --apply-residual-connection-post-layernorm (Megatron's legacy layers): the residual is the
// norm's output, so the loss changes, and the backward (the residual's gradient through the
// norm) agrees with finite differences.
TEST(GptModel, ResidualFromTheNormChangesTheLossAndBackpropagates) {
    const ModelArgs flagged = with(gpt2_args(), "apply-residual-connection-post-layernorm", "");
    GptModel plain(nn::read_transformer_args(gpt2_args()));
    GptModel residual(nn::read_transformer_args(flagged));
    plain.initialize(9);
    residual.initialize(9);
    nn::DropoutContext ctx{false, 0, 0};
    Batch batch = {{"tokens", i64_tensor({1, 2, 3, 4}, 1, 4)},
                   {"labels", i64_tensor({2, 3, 4, 5}, 1, 4)}};
    Tensor a = loss_term(plain.forward(batch, ctx, nullptr), "lm loss").values,
           b = loss_term(residual.forward(batch, ctx, nullptr), "lm loss").values;
    EXPECT_NE(a.data<float>()[0], b.data<float>()[0]);
    check_finite_differences(with(flagged, "hidden-dropout", "0.2"));
    check_finite_differences(with(llama_args(), "apply-residual-connection-post-layernorm", ""));
}

// Megatron's validate_args makes the legacy --use-rotary-position-embeddings rope, over any
// --position-embedding-type given beside it.
TEST(GptModel, LegacyRotaryFlagMeansRope) {
    EXPECT_EQ(nn::read_transformer_args(gpt2_args()).position_embedding,
              nn::PositionEmbedding::learned_absolute);
    const ModelArgs legacy = with(with(gpt2_args(), "use-rotary-position-embeddings", ""),
                                  "position-embedding-type", "learned_absolute");
    EXPECT_EQ(nn::read_transformer_args(legacy).position_embedding, nn::PositionEmbedding::rope);
}

// --position-embedding-type yarn (core_v0.19, GPT-OSS): the rope's frequencies and the factor its
// cos and sin are scaled by, as transformers' _compute_yarn_parameters gives them (head dim 16;
// GPT-OSS's settings: base 150000, factor 32, original 4096, betas 32 and 1, truncate false,
// i.e. --no-yarn-correction-range-round-to-int; and with the bounds rounded: base 10000,
// factor 8, original 64). The values printed by
//   ROPE_INIT_FUNCTIONS["yarn"](GptOssConfig(head_dim=16, rope_parameters={...}), "cpu")
// with transformers 5.25.
TEST(GptModel, YarnRopeIsTransformers) {
    struct Case {
        ModelArgs flags;
        std::vector<double> inv_freq;
        double attention_factor;
    };
    ModelArgs gpt_oss =
        with(with(gpt2_args(), "position-embedding-type", "yarn"), "kv-channels", "16");
    gpt_oss["rotary-base"] = "150000";
    gpt_oss["rotary-scaling-factor"] = "32";
    gpt_oss["no-yarn-correction-range-round-to-int"] = "";
    ModelArgs rounded =
        with(with(gpt2_args(), "position-embedding-type", "yarn"), "kv-channels", "16");
    rounded["rotary-scaling-factor"] = "8";
    rounded["yarn-original-max-position-embeddings"] = "64";
    const Case cases[] = {
        {gpt_oss,
         {1.0, 0.22541800141334534, 0.05081327259540558, 0.006794959306716919,
          0.0004564839182421565, 1.818833698052913e-05, 4.099978468730114e-06,
          9.242089618055616e-07},
         1.3465735902799727},
        {rounded,
         {1.0, 0.2239946573972702, 0.0416666641831398, 0.0039528473280370235, 0.0012499999720603228,
          0.00039528473280370235, 0.0001250000059371814, 3.9528473280370235e-05},
         1.2079441541679836},
    };
    for (const Case& c : cases) {
        const nn::TransformerConfig t = nn::transformer_layer_config(
            nn::read_transformer_args(c.flags), DType::f32, nn::TensorParallel{});
        ASSERT_TRUE(t.rotary);
        mt::ops::RopeConfig rope = t.rope;
        rope.rotary_dim = 16;
        const std::vector<double> inv = mt::ops::rope_inverse_frequencies(rope, true);
        ASSERT_EQ(inv.size(), c.inv_freq.size());
        for (size_t i = 0; i < inv.size(); ++i)
            EXPECT_NEAR(inv[i], c.inv_freq[i], 1e-7 * c.inv_freq[i]) << i;
        EXPECT_NEAR(rope.table_scale, c.attention_factor, 1e-15);
    }
    // --mscale-all-dim is 0 unless given (core_v0.19's default for YaRN; multi-latent
    // attention's is 1.0), so the flag has no default text for the tools to fill in, and the
    // args saved hold the value used.
    for (const FlagInfo& f : nn::transformer_flags())
        if (f.name == "mscale-all-dim") EXPECT_FALSE(f.default_value.has_value());
    EXPECT_EQ(nn::resolved_transformer_args(gpt_oss, nn::read_transformer_args(gpt_oss))
                  .at("mscale-all-dim"),
              "0");
    // YarnRotaryEmbedding rotates whole heads, and not pairs.
    EXPECT_THROW(nn::read_transformer_args(with(gpt_oss, "rotary-percent", "0.5")), mt::Error);
    EXPECT_THROW(nn::read_transformer_args(with(gpt_oss, "rotary-interleaved", "")), mt::Error);
}

TEST(GptModel, TrainingFlopsAsMegatronCountsThem) {
    // Values of megatron.training.training.num_floating_point_operations (core_v0.13.0) for the
    // same models and batch sizes.
    ModelArgs gpt2_small = {{"num-layers", "12"},
                            {"hidden-size", "768"},
                            {"num-attention-heads", "12"},
                            {"seq-length", "1024"},
                            {"max-position-embeddings", "1024"},
                            {"vocab-size", "50257"}};
    EXPECT_DOUBLE_EQ(GptModel(nn::read_transformer_args(gpt2_small)).training_flops(8),
                     6537477095424.0);
    ModelArgs llama = {{"num-layers", "2"},
                       {"hidden-size", "64"},
                       {"num-attention-heads", "4"},
                       {"group-query-attention", ""},
                       {"num-query-groups", "2"},
                       {"ffn-hidden-size", "128"},
                       {"swiglu", ""},
                       {"seq-length", "16"},
                       {"max-position-embeddings", "16"},
                       {"padded-vocab-size", "5120"}};
    EXPECT_DOUBLE_EQ(GptModel(nn::read_transformer_args(llama)).training_flops(4), 154927104.0);
}

// A hybrid model's FLOPs with a layer of each kind: core_v0.19.0's num_floating_point_operations
// run on its own source (hybrid_flops: attention, MLP, Mamba and MoE layers and the logits) for
// the same model and batch gives 161611776.
TEST(GptModel, HybridTrainingFlopsAsMegatronCountsThem) {
    ModelArgs hybrid = {{"num-layers", "4"},
                        {"hidden-size", "64"},
                        {"num-attention-heads", "4"},
                        {"group-query-attention", ""},
                        {"num-query-groups", "2"},
                        {"kv-channels", "16"},
                        {"ffn-hidden-size", "128"},
                        {"swiglu", ""},
                        {"seq-length", "16"},
                        {"max-position-embeddings", "16"},
                        {"position-embedding-type", "none"},
                        {"padded-vocab-size", "5120"},
                        {"num-experts", "4"},
                        {"moe-router-topk", "2"},
                        {"moe-ffn-hidden-size", "48"},
                        {"moe-shared-expert-intermediate-size", "32"},
                        {"hybrid-layer-pattern", "M*E-"},
                        {"mamba-state-dim", "8"},
                        {"mamba-head-dim", "16"},
                        {"mamba-num-groups", "2"},
                        {"disable-bias-linear", ""},
                        {"is-hybrid-model", ""}};
    const nn::TransformerArgs config = nn::read_transformer_args(hybrid);
    const GptModel model(config, single_process_context(), DType::f32,
                         read_hybrid_args(hybrid, config.num_layers));
    EXPECT_DOUBLE_EQ(model.training_flops(4), 161611776.0);
}

TEST(GptModel, ResetDocumentsAreIndependent) {
    // A second document behind an EOD gives the losses it gives alone at the start of a row.
    GptModel model(nn::read_transformer_args(gpt2_args()), DType::f64);
    model.initialize(5);
    nn::DropoutContext ctx{false, 0, 0};
    Batch alone = {{"tokens", i64_tensor({7, 8, 9}, 1, 3)},
                   {"labels", i64_tensor({8, 9, 10}, 1, 3)},
                   {"position_ids", positions(1, 3)}};
    Tensor starts = Tensor::empty({1, 5}, DType::i32);
    const int32_t s[] = {0, 0, 2, 2, 2};
    std::copy(s, s + 5, starts.data<int32_t>());
    Batch packed = {{"tokens", i64_tensor({3, 4, 7, 8, 9}, 1, 5)},
                    {"labels", i64_tensor({4, 5, 8, 9, 10}, 1, 5)},
                    {"position_ids", i64_tensor({0, 1, 0, 1, 2}, 1, 5)},
                    {"document_start", starts}};
    Tensor a = loss_term(model.forward(alone, ctx, nullptr), "lm loss").values,
           p = loss_term(model.forward(packed, ctx, nullptr), "lm loss").values;
    for (int t = 0; t < 3; ++t)
        EXPECT_NEAR(p.data<double>()[2 + t], a.data<double>()[t], 1e-12) << t;
    // Without the resets the second document sees the first.
    packed.erase("document_start");
    Tensor joined = loss_term(model.forward(packed, ctx, nullptr), "lm loss").values;
    EXPECT_GT(std::fabs(joined.data<double>()[4] - a.data<double>()[2]), 1e-9);
}

// --recompute-granularity full (every uniform chunk and block layout) and selective (mlp,
// layernorm) give bit-identical grads
// (dropout on: the replay draws the same masks), with document resets; Megatron's checks apply.
// One forward and backward of a fixed batch (dropout on, document resets): the losses and
// every parameter's gradient, for the recompute tests' bit-for-bit comparisons.
std::pair<std::vector<float>, std::vector<std::vector<float>>> losses_and_grads(
    const ModelArgs& args) {
    GptModel model(nn::read_transformer_args(args));
    model.initialize(9);
    Tensor starts = Tensor::empty({2, 8}, DType::i32);
    for (int i = 0; i < 16; ++i) starts.data<int32_t>()[i] = i % 8 < 3 ? 0 : 3;
    Batch batch = {{"tokens", i64_tensor({1, 5, 9, 2, 7, 3, 8, 4, 6, 2, 1, 9, 4, 3, 7, 5}, 2, 8)},
                   {"labels", i64_tensor({5, 9, 2, 7, 3, 8, 4, 6, 2, 1, 9, 4, 3, 7, 5, 1}, 2, 8)},
                   {"position_ids", positions(2, 8)},
                   {"document_start", starts}};
    nn::DropoutContext ctx{true, 77, 5};
    std::unique_ptr<Activations> saved;
    Tensor losses = loss_term(model.forward(batch, ctx, &saved), "lm loss").values;
    Tensor dl = Tensor::empty(losses.shape(), DType::f32);
    for (int i = 0; i < 16; ++i) dl.data<float>()[i] = 0.0625f * float(1 + i % 3);
    model.backward({dl}, *saved);
    std::vector<std::vector<float>> out;
    for (nn::Parameter* p : model.parameters())
        out.emplace_back(p->grad.data<float>(), p->grad.data<float>() + p->grad.numel());
    return std::make_pair(std::vector<float>(losses.data<float>(), losses.data<float>() + 16), out);
}

TEST(GptModel, RecomputeGivesBitIdenticalGradients) {
    const auto grads_of = losses_and_grads;
    ModelArgs base = with(with(gpt2_args(), "num-layers", "3"), "attention-dropout", "0.2");
    const auto plain = grads_of(base);
    for (auto [method, layers] : std::vector<std::pair<std::string, std::string>>{
             {"uniform", "1"}, {"uniform", "2"}, {"block", "2"}}) {
        ModelArgs a =
            with(with(with(base, "recompute-granularity", "full"), "recompute-method", method),
                 "recompute-num-layers", layers);
        const auto got = grads_of(a);
        EXPECT_EQ(got.first, plain.first) << method << " " << layers;
        EXPECT_EQ(got.second, plain.second) << method << " " << layers;
    }
    EXPECT_EQ(grads_of(with(base, "recompute-activations", "")).second, plain.second);
    // Selective: the MLP, the norms' outputs, both.
    for (const std::string modules : {"mlp", "layernorm", "core_attn mlp layernorm"}) {
        const auto got = grads_of(
            with(with(base, "recompute-granularity", "selective"), "recompute-modules", modules));
        EXPECT_EQ(got.first, plain.first) << modules;
        EXPECT_EQ(got.second, plain.second) << modules;
    }
    EXPECT_NE(mt::test::error_of([&] {
                  nn::read_transformer_args(with(with(with(base, "recompute-granularity", "full"),
                                                      "recompute-method", "block"),
                                                 "recompute-num-layers", "4"));
              }).find("recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 3"),
              std::string::npos);
}

TEST(GptModel, BackwardMatchesFiniteDifferencesGemmaStyle) {
    check_finite_differences(with(gemma_args(), "hidden-dropout", "0.2"));
}

// Each feature changes the loss (none is parsed and dropped), and the sandwich norms follow the
// linear they belong to, in megatron-core's order under Megatron-Bridge's names.
TEST(GptModel, GemmaFeaturesEachChangeTheLoss) {
    const auto loss_of = [](const ModelArgs& args) {
        GptModel model(nn::read_transformer_args(args));
        model.initialize(9);
        for (nn::Parameter* p : model.parameters())  // norms away from 1 + 0
            for (int64_t i = 0; i < p->value.numel(); ++i)
                p->value.data<float>()[i] += 0.05f * float((i * 7 + 3) % 11) - 0.25f;
        nn::DropoutContext ctx{false, 0, 0};
        Batch batch = {{"tokens", i64_tensor({1, 2, 3, 4, 5, 6}, 1, 6)},
                       {"labels", i64_tensor({2, 3, 4, 5, 6, 7}, 1, 6)}};
        return loss_term(model.forward(batch, ctx, nullptr), "lm loss").values.data<float>()[5];
    };
    const float all = loss_of(gemma_args());
    for (const char* flag : {"geglu", "post-sublayer-norm", "scale-embeddings", "rotary-base-local",
                             "softmax-scale"}) {
        ModelArgs a = gemma_args();
        a.erase(flag);
        if (std::string(flag) == "geglu") a["swiglu"] = "";
        EXPECT_NE(loss_of(a), all) << flag;
    }
    GptModel model(nn::read_transformer_args(gemma_args()));
    std::vector<std::string> names;
    for (nn::Parameter* p : model.parameters()) names.push_back(p->name);
    const auto at = [&](const std::string& n) {
        return std::find(names.begin(), names.end(), n) - names.begin();
    };
    const std::string l = "decoder.layers.1.";
    EXPECT_EQ(at(l + "self_attention.linear_proj.post_layernorm.weight"),
              at(l + "self_attention.linear_proj.weight") + 1);
    EXPECT_EQ(at(l + "mlp.linear_fc2.post_layernorm.weight"), at(l + "mlp.linear_fc2.weight") + 1);
    EXPECT_EQ(at(l + "self_attention.linear_qkv.layer_norm_weight"),
              at(l + "self_attention.linear_proj.post_layernorm.weight") + 1);
}

// Selective recompute rebuilds the norms' outputs that the residual adds to, bit for bit.
TEST(GptModel, RecomputeOfResidualFromTheNormGivesBitIdenticalGradients) {
    const ModelArgs base = with(gpt2_args(), "apply-residual-connection-post-layernorm", "");
    const auto plain = losses_and_grads(base);
    for (const std::string modules : {"mlp", "layernorm"}) {
        const auto got = losses_and_grads(
            with(with(base, "recompute-granularity", "selective"), "recompute-modules", modules));
        EXPECT_EQ(got.first, plain.first) << modules;
        EXPECT_EQ(got.second, plain.second) << modules;
    }
}

// --recompute-modules moe_act: the experts' activations rebuilt from fc1's outputs in the
// backward, bit for bit (SwiGLU and GeLU experts, separate and grouped GEMMs).
TEST(GptModel, RecomputeOfTheExpertsActivationGivesBitIdenticalGradients) {
    for (const bool swiglu : {true, false}) {
        ModelArgs moe = with(with(with(gpt2_args(), "num-experts", "4"), "moe-router-topk", "2"),
                             "moe-ffn-hidden-size", "24");
        if (swiglu)
            moe = with(with(with(moe, "swiglu", ""), "moe-grouped-gemm", ""), "ffn-hidden-size",
                       "32");
        const auto plain = losses_and_grads(moe);
        const auto got = losses_and_grads(
            with(with(moe, "recompute-granularity", "selective"), "recompute-modules", "moe_act"));
        EXPECT_EQ(got.first, plain.first) << swiglu;
        EXPECT_EQ(got.second, plain.second) << swiglu;
    }
    EXPECT_NE(
        mt::test::error_of([&] {
            nn::read_transformer_args(with(with(gpt2_args(), "recompute-granularity", "selective"),
                                           "recompute-modules", "moe"));
        }).find("--recompute-modules moe: not supported yet"),
        std::string::npos);
}

TEST(GptModel, BackwardMatchesFiniteDifferencesOddSizes) {
    check_finite_differences(with(odd_args(), "transformer-impl", "local"));
}

// --- PyTorch reference (tests/fixtures/gpt/make_model_fixtures.py) -------------------------

void check_reference(const std::string& file) {
    const mt::test::ModelReference ref = mt::test::load_model_reference("gpt/" + file);
    const int64_t B = 2, T = 16;
    GptModel model(nn::read_transformer_args(ref.args));
    const auto params = model.parameters();
    ASSERT_EQ(params.size(), ref.grads.size());
    for (auto* p : params) {
        ASSERT_TRUE(ref.grads.count(p->name)) << p->name << " is not in " << file;
        ASSERT_EQ(p->value.numel(), ref.grads.at(p->name).numel) << p->name;
        mt::test::fill_formula_weight(*p);
    }
    auto ints = [&](const char* key) {
        std::vector<int64_t> v;
        for (double x : ref.vectors.at(key)) v.push_back(int64_t(x));
        return i64_tensor(v, B, T);
    };
    const std::vector<double>& weights = ref.vectors.at("loss_weights");
    Tensor loss_mask = Tensor::empty({B, T}, DType::f32);
    for (int64_t i = 0; i < B * T; ++i) set_element(loss_mask, i, weights[size_t(i)]);
    Batch batch = {{"tokens", ints("tokens")},
                   {"labels", ints("labels")},
                   {"position_ids", positions(B, T)},
                   {"loss_mask", loss_mask}};
    nn::DropoutContext ctx{true, 0, 0};
    std::unique_ptr<Activations> saved;
    const Losses terms = model.forward(batch, ctx, &saved);
    // The model's losses, then each multi-token prediction depth's (over the labels k ahead).
    const int64_t depths = model.config().mtp_num_layers;
    ASSERT_EQ(terms.size(), size_t(1 + depths)) << file;
    for (int64_t k = 0; k <= depths; ++k) {
        const std::string key = k == 0 ? "losses" : "mtp_losses_" + std::to_string(k);
        const Tensor& losses = terms[size_t(k)].values;
        const auto& want = ref.vectors.at(key);
        double loss_scale = *std::max_element(want.begin(), want.end());
        for (int64_t i = 0; i < B * T; ++i)
            EXPECT_TRUE(mt::test::close_to(element(losses, i), want[size_t(i)], loss_scale))
                << file << " " << key << " " << i << ": " << element(losses, i) << " vs torch "
                << want[size_t(i)];
    }

    // torch's backward of sum(w · losses), with Megatron's MTP loss added by its
    // MTPLossAutoScaler: scaling factor / depths x each depth's mean over the weights k ahead.
    std::vector<Tensor> dterms;
    for (int64_t k = 0; k <= depths; ++k) {
        std::vector<double> w(size_t(B * T), 0.0);
        double count = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t + k < T; ++t) {
                w[size_t(b * T + t)] = weights[size_t(b * T + t + k)];
                count += w[size_t(b * T + t)];
            }
        const double scale =
            k == 0 ? 1.0 : model.config().mtp_loss_scaling_factor / double(depths) / count;
        Tensor d = Tensor::empty({B, T}, DType::f32);
        for (int64_t i = 0; i < B * T; ++i) set_element(d, i, w[size_t(i)] * scale);
        dterms.push_back(d);
    }
    model.backward(dterms, *saved);
    mt::test::expect_grads_match_reference(params, ref, file);
}

TEST(GptModel, MatchesPyTorchGpt2Style) {
    check_reference("model_gpt2.txt");
}

TEST(GptModel, MatchesPyTorchLlamaStyle) {
    check_reference("model_llama.txt");
}

// --- multi-latent attention (megatron-core's MLASelfAttention) -----------------------------

// DeepSeek-V3's shape in small: q-lora, q/kv norms, YaRN with a scaling factor and mscales.
// DeepSeek-V2-Lite's: no q-lora and no norms; GPT-2's LayerNorm, biases and learned positions,
// a value head larger than the query head (the kernel pads the other way).
ModelArgs mla_lite_args() {
    ModelArgs a = gpt2_args();
    for (auto [k, v] : {std::pair{"multi-latent-attention", ""},
                        {"kv-lora-rank", "5"},
                        {"qk-head-dim", "2"},
                        {"qk-pos-emb-head-dim", "2"},
                        {"v-head-dim", "6"}})
        a[k] = v;
    return a;
}

TEST(GptModel, MatchesMegatronCoreMultiLatentAttention) {
    // tests/fixtures/gpt/make_deepseek_fixtures.py: megatron-core's MLA GPTModel (local spec).
    check_reference("model_mla.txt");
    check_reference("model_mla_lite.txt");
}

// --- multi-token prediction (megatron-core's MultiTokenPredictionBlock) ----------------------

TEST(GptModel, MatchesMegatronCoreMultiTokenPrediction) {
    // tests/fixtures/gpt/make_deepseek_fixtures.py: a Llama-style GPTModel with two depths, and
    // DeepSeek-V3 in small (MLA, a dense layer then MoE with grouped sigmoid routing and a shared
    // expert, one depth on the MoE layer's spec).
    check_reference("model_mtp.txt");
    check_reference("model_deepseek.txt");
}

TEST(GptModel, MultiTokenPredictionFlopsAreMegatrons) {
    // megatron.training.training.num_floating_point_operations (core_v0.13.1) for the fixtures'
    // models and 4 samples: each depth as one more layer (a MoE one after a MoE last layer), its
    // norms and eh_proj, one more pass through the output layer; the MoE layers' experts.
    auto flops = [](const char* file, bool mtp) {
        ModelArgs args = mt::test::load_model_reference(std::string("gpt/") + file).args;
        if (!mtp) args.erase("mtp-num-layers");
        return GptModel(nn::read_transformer_args(args)).training_flops(4);
    };
    EXPECT_DOUBLE_EQ(flops("model_mtp.txt", true), 432685056.0);
    EXPECT_DOUBLE_EQ(flops("model_mtp.txt", false), 150208512.0);
    EXPECT_DOUBLE_EQ(flops("model_deepseek.txt", true), 290649600.0);
    EXPECT_DOUBLE_EQ(flops("model_deepseek.txt", false), 149283840.0);
}

TEST(GptModel, MultiTokenPredictionParametersAreMegatronCoresInItsOrder) {
    // GPTModel registers embedding, decoder, mtp, output_layer; each depth enorm, hnorm,
    // eh_proj, transformer_layer (named as the decoder's layers), final_layernorm.
    GptModel model(nn::read_transformer_args(with(llama_args(), "mtp-num-layers", "2")));
    std::vector<std::string> names;
    for (auto* p : model.parameters())
        if (!p->name.starts_with("decoder.layers.")) names.push_back(p->name);
    std::vector<std::string> want = {"embedding.word_embeddings.weight",
                                     "decoder.final_layernorm.weight"};
    for (const char* k : {"0", "1"})
        for (const char* rest :
             {"enorm.weight", "hnorm.weight", "eh_proj.weight",
              "transformer_layer.self_attention.linear_proj.weight",
              "transformer_layer.self_attention.linear_qkv.layer_norm_weight",
              "transformer_layer.self_attention.linear_qkv.weight",
              "transformer_layer.mlp.linear_fc1.layer_norm_weight",
              "transformer_layer.mlp.linear_fc1.weight", "transformer_layer.mlp.linear_fc2.weight",
              "final_layernorm.weight"})
            want.push_back(std::string("mtp.layers.") + k + "." + rest);
    want.push_back("output_layer.weight");
    EXPECT_EQ(names, want);
}

TEST(GptModel, MultiTokenPredictionRefusesWhatMegatronRefuses) {
    // Megatron's validate_args: rope or no position embedding only, no context parallelism.
    auto error = mt::test::error_of(
        [&] { nn::read_transformer_args(with(gpt2_args(), "mtp-num-layers", "1")); });
    EXPECT_NE(error.find("--mtp-num-layers: Megatron's multi-token prediction takes "
                         "--position-embedding-type rope or none"),
              std::string::npos)
        << error;
    error = mt::test::error_of([&] {
        ModelArgs hybrid = with(llama_args(), "mtp-num-layers", "1");
        hybrid["hybrid-override-pattern"] = "M*";
        hybrid["mamba-state-dim"] = "8";
        hybrid["mamba-head-dim"] = "8";
        hybrid["mamba-num-groups"] = "2";
        const nn::TransformerArgs config = nn::read_transformer_args(hybrid);
        GptModel(config, single_process_context(), DType::f32,
                 read_hybrid_args(hybrid, config.num_layers));
    });
    EXPECT_NE(error.find("--mtp-num-layers in a hybrid model"), std::string::npos) << error;
    // A multi-token prediction model still generates from its decoder alone.
    GptModel model(nn::read_transformer_args(with(llama_args(), "mtp-num-layers", "1")));
    model.initialize(3);
    GptModel plain(nn::read_transformer_args(llama_args()));
    for (nn::Parameter* p : plain.parameters()) {
        for (nn::Parameter* q : model.parameters())
            if (q->name == p->name) p->value.copy_from(q->value);
    }
    const Tensor tokens = i64_tensor({1, 2, 3, 4}, 1, 4);
    const Tensor a = model.logits(tokens, nullptr, 0), b = plain.logits(tokens, nullptr, 0);
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(element(a, i), element(b, i)) << i;
}

TEST(GptModel, BackwardMatchesFiniteDifferencesMultiTokenPrediction) {
    // Two depths, with dropout: the shared embedding and output layer take every depth's
    // gradient, each depth's input that of the next.
    // (A smaller step: the depths stacked on the decoder curve the objective more sharply.)
    check_finite_differences(
        with(with(llama_args(), "mtp-num-layers", "2"), "hidden-dropout", "0.2"), false, 3e-6);
}

TEST(GptModel, BackwardMatchesFiniteDifferencesMultiLatentAttention) {
    check_finite_differences(
        with(with(mla_args(), "hidden-dropout", "0.2"), "attention-dropout", "0.2"));
    check_finite_differences(mla_lite_args(), /*documents=*/true);
    // Transformer Engine's names fuse the q and kv norms into the up-projections: the same model.
    check_finite_differences(with(mla_args(), "transformer-impl", "local"));
}

TEST(GptModel, MultiLatentAttentionParametersAreMegatronCoresInItsOrder) {
    for (const char* impl : {"transformer_engine", "local"}) {
        GptModel model(nn::read_transformer_args(with(mla_args(), "transformer-impl", impl)));
        std::vector<std::string> names;
        for (auto* p : model.parameters())
            if (p->name.starts_with("decoder.layers.0.")) names.push_back(p->name.substr(17));
        const bool te = std::string(impl) == "transformer_engine";
        std::vector<std::string> want = {"input_layernorm.weight",
                                         "self_attention.linear_proj.weight",
                                         "self_attention.linear_q_down_proj.weight"};
        if (te) want.push_back("self_attention.linear_q_up_proj.layer_norm_weight");
        want.push_back("self_attention.linear_q_up_proj.weight");
        want.push_back("self_attention.linear_kv_down_proj.weight");
        if (te) want.push_back("self_attention.linear_kv_up_proj.layer_norm_weight");
        want.push_back("self_attention.linear_kv_up_proj.weight");
        if (!te) {
            want.push_back("self_attention.q_layernorm.weight");
            want.push_back("self_attention.kv_layernorm.weight");
        }
        want.push_back(te ? "mlp.linear_fc1.layer_norm_weight" : "pre_mlp_layernorm.weight");
        want.push_back("mlp.linear_fc1.weight");
        want.push_back("mlp.linear_fc2.weight");
        EXPECT_EQ(names, want) << impl;
    }
}

TEST(GptModel, MultiLatentAttentionCachesTheLatentAndDecodesAsTheFullForward) {
    for (const auto& [args, dtype] : {std::pair{mla_args(), DType::f32},
                                      {mla_lite_args(), DType::f32},
                                      {mla_args(), DType::bf16}}) {
        // bf16 rounds the absorbed products and the expanded keys differently.
        const double tolerance = dtype == DType::f32 ? 1e-4 : 3e-2;
        GptModel model(nn::read_transformer_args(args), dtype);
        model.initialize(5);
        for (auto* p : model.parameters()) fill_formula_weight(*p);
        const int64_t B = 2, T = 8, V = model.logits(i64_tensor({1, 2}, 1, 2), nullptr, 0).size(2);
        std::vector<int64_t> ids;
        for (int64_t i = 0; i < B * T; ++i) ids.push_back((i * 7 + 3) % 50);
        const Tensor tokens = i64_tensor(ids, B, T);
        const Tensor full = model.logits(tokens, nullptr, 0);
        auto state = model.make_inference_state(B, T);
        // Per position the latent and the rope key only: kv_lora_rank + qk_pos_emb_head_dim.
        const auto& layer = dynamic_cast<const nn::MlaState&>(*state->layer(0).at(0));
        EXPECT_EQ(layer.latent_and_rope_key.shape(),
                  (Shape{B, T, 1, args.count("q-lora-rank") ? 5 + 4 : 5 + 2}));
        // A prefill of 3 tokens (attending as training does), a piece of 2 (over the cached
        // latents, causal among its own), then one token a step.
        std::vector<Tensor> pieces;
        for (auto [begin, end] :
             {std::pair<int64_t, int64_t>{0, 3}, {3, 5}, {5, 6}, {6, 7}, {7, 8}})
            pieces.push_back(  // (logits advances the state)
                model.logits(tokens.slice(1, begin, end).contiguous(), state.get(), 0));
        int64_t position = 0;
        for (const Tensor& piece : pieces) {
            for (int64_t t = 0; t < piece.size(1); ++t, ++position)
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t v = 0; v < V; ++v) {
                        const double want = element(full, (b * T + position) * V + v);
                        const double got = element(piece, (b * piece.size(1) + t) * V + v);
                        ASSERT_NEAR(got, want, tolerance * (1 + std::abs(want)))
                            << dtype_name(dtype) << " row " << b << " position " << position
                            << " token " << v;
                    }
        }
    }
}

// --recompute-modules mla_up_proj: q, k and v rebuilt from the up-projections' inputs in the
// backward, alone and with layernorm's recompute (which drops linear_q_proj's input too).
TEST(GptModel, MultiLatentAttentionRecomputeOfUpProjectionsIsBitIdentical) {
    for (const ModelArgs& args : {mla_args(), mla_lite_args()}) {
        const ModelArgs base = with(with(args, "num-layers", "3"), "attention-dropout", "0.2");
        const auto plain = losses_and_grads(base);
        for (const std::string modules : {"mla_up_proj", "mla_up_proj layernorm mlp"}) {
            const auto got = losses_and_grads(with(with(base, "recompute-granularity", "selective"),
                                                   "recompute-modules", modules));
            EXPECT_EQ(got.first, plain.first) << modules;
            EXPECT_EQ(got.second, plain.second) << modules;
        }
    }
    EXPECT_NE(
        mt::test::error_of([&] {
            nn::read_transformer_args(with(with(gpt2_args(), "recompute-granularity", "selective"),
                                           "recompute-modules", "mla_up_proj"));
        }).find("only supported with multi_latent_attention"),
        std::string::npos);
}

TEST(GptModel, MultiLatentAttentionFlopsAreMegatrons) {
    // megatron/training/training.py's num_floating_point_operations(args, 3) on parse_args of
    // these flags (padded_vocab_size 64), core_v0.13: 753120 with --q-lora-rank 6, 815904
    // without.
    EXPECT_EQ(GptModel(nn::read_transformer_args(mla_args())).training_flops(3), 753120.0);
    ModelArgs lite = mla_args();
    lite.erase("q-lora-rank");
    EXPECT_EQ(GptModel(nn::read_transformer_args(lite)).training_flops(3), 815904.0);
}

TEST(GptModel, MultiLatentAttentionRefusesWhatItDoesNotSupportYet) {
    auto error = mt::test::error_of(
        [&] { nn::read_transformer_args(with(mla_args(), "group-query-attention", "")); });
    EXPECT_NE(error.find("--group-query-attention"), std::string::npos) << error;
    error = mt::test::error_of(
        [&] { nn::read_transformer_args(with(mla_args(), "rotary-interleaved", "")); });
    EXPECT_NE(error.find("interleaved"), std::string::npos) << error;
    error = mt::test::error_of(
        [&] { nn::read_transformer_args(with(mla_args(), "rope-type", "mrope")); });
    EXPECT_NE(error.find("--rope-type mrope"), std::string::npos) << error;
    // Megatron's hybrid specs build standard self-attention whatever the flag says.
    ModelArgs hybrid = mla_args();
    hybrid["hybrid-override-pattern"] = "M*";
    hybrid["mamba-state-dim"] = "8";
    hybrid["mamba-head-dim"] = "8";
    hybrid["mamba-num-groups"] = "2";
    error = mt::test::error_of([&] {
        const nn::TransformerArgs config = nn::read_transformer_args(hybrid);
        GptModel(config, single_process_context(), DType::f32,
                 read_hybrid_args(hybrid, config.num_layers));
    });
    EXPECT_NE(error.find("--multi-latent-attention in a hybrid model"), std::string::npos) << error;
}

// --- batch checks, initialisation, the family --------------------------------------------

TEST(GptModel, RejectsInvalidBatchesAndWhatIsNotSupportedYet) {
    GptModel model(nn::read_transformer_args(gpt2_args()));
    const int64_t B = 1, T = 4;
    Batch batch = {{"tokens", i64_tensor({1, 2, 3, 4}, B, T)},
                   {"labels", i64_tensor({2, 3, 4, 5}, B, T)},
                   {"position_ids", positions(B, T)}};
    nn::DropoutContext ctx{false, 0, 0};
    Tensor starts = Tensor::zeros({B, T}, DType::i32);
    batch["document_start"] = starts;
    EXPECT_EQ(loss_term(model.forward(batch, ctx, nullptr), "lm loss").values.shape(),
              (Shape{B, T}));       // all zeros: fine
    starts.data<int32_t>()[1] = 2;  // after its own position: not a document start
    auto error = mt::test::error_of([&] { model.forward(batch, ctx, nullptr); });
    EXPECT_NE(error.find("document_start[0, 1] = 2 is not a position at or before it"),
              std::string::npos)
        << error;
    batch.erase("document_start");
    batch["position_ids"] = i64_tensor({0, 1, 0, 99}, B, T);
    error = mt::test::error_of([&] { model.forward(batch, ctx, nullptr); });
    EXPECT_NE(error.find("99"), std::string::npos) << error;  // beyond the learned positions
    batch.erase("labels");
    error = mt::test::error_of([&] { model.forward(batch, ctx, nullptr); });
    EXPECT_NE(error.find("\"labels\""), std::string::npos) << error;
}

TEST(GptModel, InitializeFollowsMegatronsScheme) {
    ModelArgs args = with(with(gpt2_args(), "hidden-size", "64"), "init-method-std", "0.05");
    GptModel model(nn::read_transformer_args(args));
    model.initialize(1234);
    const double std_out = 0.05 / std::sqrt(2.0 * 2);
    for (auto* p : model.parameters()) {
        const Tensor& v = p->value;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < v.numel(); ++i) {
            sum += element(v, i);
            sq += element(v, i) * element(v, i);
        }
        const double n = double(v.numel()), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
        if (v.dim() == 1) {
            const double want = p->name.ends_with("bias") ? 0.0 : 1.0;
            EXPECT_EQ(mean, want) << p->name;
            EXPECT_EQ(sd, 0.0) << p->name;
            continue;
        }
        const bool scaled =
            p->name.ends_with("linear_proj.weight") || p->name.ends_with("linear_fc2.weight");
        const double want = scaled ? std_out : 0.05;
        EXPECT_NEAR(sd, want, 5 * want / std::sqrt(n) + 0.01 * want) << p->name;
        EXPECT_NEAR(mean, 0.0, 5 * want / std::sqrt(n)) << p->name;
    }
    // Deterministic in the seed, and a different seed draws differently.
    GptModel same(nn::read_transformer_args(args)), other(nn::read_transformer_args(args));
    same.initialize(1234);
    other.initialize(1235);
    const Tensor& a = model.parameters()[0]->value;
    EXPECT_EQ(std::memcmp(a.raw_data(), same.parameters()[0]->value.raw_data(), a.nbytes()), 0);
    EXPECT_NE(std::memcmp(a.raw_data(), other.parameters()[0]->value.raw_data(), a.nbytes()), 0);

    GptModel one_p(nn::read_transformer_args(with(args, "apply-layernorm-1p", "")));
    one_p.initialize(1);
    for (auto* p : one_p.parameters()) {
        if (p->value.dim() == 1) {
            EXPECT_EQ(element(p->value, 0), 0.0) << p->name;
        }
    }
}

TEST(GptModel, FamilyBuildsIt) {
    Registry registry;
    register_gpt(registry);
    auto family = registry.create_model("gpt");
    auto model = family->build(llama_args());
    const auto infos = family->parameters(llama_args());
    const auto params = model->parameters();
    ASSERT_EQ(params.size(), infos.size());
    for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(params[i]->name, infos[i].name);
    model->initialize(5);
    const int64_t B = 2, T = 8;
    std::vector<int64_t> ids(size_t(B * T), 3);
    Batch batch = {{"tokens", i64_tensor(ids, B, T)}, {"labels", i64_tensor(ids, B, T)}};
    nn::DropoutContext ctx{true, 1, 0};
    std::unique_ptr<Activations> saved;
    Tensor with_saved = loss_term(model->forward(batch, ctx, &saved), "lm loss").values;
    // Near-uniform logits at initialisation: loss ~ log(padded vocabulary).
    EXPECT_NEAR(element(with_saved, 0), std::log(64.0), 0.1);
    Tensor dl = Tensor::zeros({B, T}, DType::f32);
    set_element(dl, 0, 1.0);
    model->backward({dl}, *saved);
    double norm = 0;
    for (auto* p : params)
        for (int64_t i = 0; i < p->grad.numel(); ++i)
            norm += element(p->grad, i) * element(p->grad, i);
    EXPECT_GT(norm, 0.0);
}

}  // namespace
}  // namespace mt::plugins::gpt
