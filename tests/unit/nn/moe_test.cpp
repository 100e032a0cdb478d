// Mixture of experts: the routing against megatron-core's on fixed logits
// (tests/fixtures/moe/router_cases.txt: probs, map, token counts, aux and z losses, the logits'
// gradient and the permuted token order), MoE transformer layers' backward against f64 finite
// differences (dropless and capacity dropping, GeLU and SwiGLU experts, shared experts), the
// parameter names of Megatron-core's MoE layer, and --moe-layer-freq's list expressions.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "mt/backend.h"
#include "mt/nn/moe/layer.h"
#include "mt/nn/moe/routing.h"
#include "mt/nn/transformer_layer.h"
#include "nn_test_util.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::Tensor;
using mt::test::random_like;

// One case of router_cases.txt: its settings and labelled value lists.
struct RouterCase {
    std::string name;
    std::map<std::string, std::string> settings;
    std::map<std::string, std::vector<double>> values;
};

std::vector<RouterCase> read_router_cases() {
    std::ifstream in(mt::test::fixtures_dir() / "moe" / "router_cases.txt");
    EXPECT_TRUE(in) << "missing tests/fixtures/moe/router_cases.txt";
    std::vector<RouterCase> cases;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string label;
        s >> label;
        if (label == "case") {
            cases.emplace_back();
            s >> cases.back().name;
            for (std::string kv; s >> kv;)
                cases.back().settings[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
            continue;
        }
        std::string word;
        while (s >> word && word != ":") {
        }
        std::vector<double>& v = cases.back().values[label];
        for (double x; s >> x;) v.push_back(x);
    }
    return cases;
}

mt::nn::RouterConfig router_config(const RouterCase& c, int64_t experts) {
    auto get = [&](const char* key) { return c.settings.at(key); };
    auto number = [&](const char* key) { return get(key) == "None" ? 0.0 : std::stod(get(key)); };
    mt::nn::RouterConfig r;
    r.num_experts = experts;
    r.topk = std::stoll(get("topk"));
    r.score_function = get("score_function") == "sigmoid" ? mt::nn::ScoreFunction::sigmoid
                                                          : mt::nn::ScoreFunction::softmax;
    r.pre_softmax = get("pre_softmax") == "True";
    r.topk_scaling_factor = number("scaling_factor");
    r.num_groups = int64_t(number("num_groups"));
    r.group_topk = int64_t(number("group_topk"));
    r.capacity_factor = number("capacity_factor");
    r.drop_policy =
        get("drop_policy") == "position" ? mt::nn::DropPolicy::position : mt::nn::DropPolicy::probs;
    r.pad_to_capacity = get("pad_to_capacity") == "True";
    const std::string lb = get("load_balancing_type");
    r.load_balancing = lb == "seq_aux_loss" ? mt::nn::LoadBalancing::seq_aux_loss
                       : lb == "sinkhorn"   ? mt::nn::LoadBalancing::sinkhorn
                       : lb == "none"       ? mt::nn::LoadBalancing::none
                                            : mt::nn::LoadBalancing::aux_loss;
    r.aux_loss_coeff = number("aux_coeff");
    r.z_loss_coeff = number("z_coeff");
    r.expert_bias = get("expert_bias") != "None";
    return r;
}

// The case's expert bias values (empty: none).
std::vector<double> expert_bias_of(const RouterCase& c) {
    std::vector<double> bias;
    if (c.settings.at("expert_bias") == "None") return bias;
    std::istringstream list(c.settings.at("expert_bias"));
    for (std::string x; std::getline(list, x, ',');) bias.push_back(std::stod(x));
    return bias;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
}

TEST(MoeRouting, EqualsMegatronCoreOnFixedLogits) {
    const std::vector<RouterCase> cases = read_router_cases();
    ASSERT_EQ(cases.size(), 13u);
    for (const RouterCase& c : cases) {
        SCOPED_TRACE(c.name);
        // Which tokens CPU torch.topk keeps among equal values (the position policy, the padding)
        // is its sort's tie order; the routing keeps the first, as the "_first" cases do.
        const bool torch_ties = c.name == "capacity_position" || c.name == "capacity_pad";
        if (c.name == "capacity_position") continue;
        const std::vector<double>& logits = c.values.at("logits");
        const int64_t E = int64_t(c.values.at("tokens_per_expert").size());
        const int64_t N = int64_t(logits.size()) / E;
        const mt::nn::RouterConfig config = router_config(c, E);
        const mt::nn::RoutingShape shape{std::stoll(c.settings.at("seq")),
                                         std::stoll(c.settings.at("batch")), nullptr};
        const mt::nn::Routing r = mt::nn::route(config, logits, shape, expert_bias_of(c), true,
                                                /*f64=*/false);
        expect_near_all(r.probs, c.values.at("probs"), 1e-6, "probs");
        std::vector<double> counts(r.tokens_per_expert.begin(), r.tokens_per_expert.end());
        EXPECT_EQ(counts, c.values.at("tokens_per_expert"));
        if (c.values.count("aux_loss"))
            EXPECT_NEAR(r.aux_loss, c.values.at("aux_loss")[0], 1e-6 * c.values.at("aux_loss")[0]);
        else
            EXPECT_EQ(r.aux_loss, 0.0);
        if (c.values.count("z_loss"))
            EXPECT_NEAR(r.z_loss, c.values.at("z_loss")[0], 1e-6 * c.values.at("z_loss")[0]);
        const std::vector<double> dl =
            mt::nn::route_backward(config, logits, r, c.values.at("dprobs"), 1.0, false);
        expect_near_all(dl, c.values.at("dlogits"), 2e-6, "dlogits");
        if (torch_ties) continue;
        std::vector<double> map(r.map.begin(), r.map.end());
        EXPECT_EQ(map, c.values.at("routing_map"));
        // moe_utils.permute's order: expert by expert, each expert's tokens in order.
        std::vector<double> order;
        for (int64_t e = 0; e < E; ++e)
            for (int64_t t = 0; t < N; ++t)
                if (r.map[size_t(t * E + e)]) order.push_back(double(t));
        EXPECT_EQ(order, c.values.at("sorted_indices"));
    }
}

// DeepSpeed's gate (Megatron-DeepSpeed's MoE layers) in double: d/d logits of Σ probs·w plus
// the load-balancing loss, by finite differences, for top-1 (tokens over capacity dropped by the
// random keys) and top-2 (by position), training.
TEST(MoeRouting, DeepSpeedGateGradientsMatchFiniteDifferences) {
    for (const int topk : {1, 2}) {
        mt::nn::RouterConfig config;
        config.num_experts = 4;
        config.topk = topk;
        config.aux_loss_coeff = 0.7;
        config.gshard.enabled = true;
        config.gshard.train_capacity_factor = 0.5;
        config.gshard.min_capacity = 1;
        config.gshard.sample_second_expert = false;
        const int64_t N = 12, E = 4;
        std::mt19937 rng(40 + unsigned(topk));
        std::uniform_real_distribution<double> u(-1.0, 1.0), key(0.01, 0.99);
        std::vector<double> logits(size_t(N * E)), w(size_t(N * E)), keys(size_t(N * E));
        for (auto* v : {&logits, &w})
            for (double& x : *v) x = u(rng);
        for (double& x : keys) x = key(rng);
        const mt::nn::RoutingShape shape{N, 1, nullptr};
        auto value = [&](const std::vector<double>& l) {
            const mt::nn::Routing r = mt::nn::route(config, l, shape, {}, true, true, keys);
            double f = r.aux_loss;
            for (size_t i = 0; i < w.size(); ++i) f += r.probs[i] * w[i];
            return f;
        };
        const mt::nn::Routing r = mt::nn::route(config, logits, shape, {}, true, true, keys);
        int dropped = 0;
        for (int64_t t = 0; t < N; ++t)
            for (int64_t j = 0; j < topk; ++j)
                dropped += !r.map[size_t(t * E + r.top[size_t(t * topk + j)])];
        EXPECT_GT(dropped, 0) << "top-" << topk << ": the capacity should drop tokens";
        EXPECT_GT(r.aux_loss, 0.0);
        const std::vector<double> analytic =
            mt::nn::route_backward(config, logits, r, w, 1.0, true);
        for (size_t i = 0; i < logits.size(); ++i) {
            std::vector<double> up = logits, down = logits;
            up[i] += 1e-6;
            down[i] -= 1e-6;
            EXPECT_NEAR(analytic[i], (value(up) - value(down)) / 2e-6, 1e-6)
                << "top-" << topk << " logit " << i;
        }
    }
}

TEST(MoeRouting, CapacityIsMegatronsCeiling) {
    EXPECT_EQ(mt::nn::expert_capacity(48, 8, 1.0), 6);
    EXPECT_EQ(mt::nn::expert_capacity(48, 8, 1.5), 9);
    EXPECT_EQ(mt::nn::expert_capacity(10, 4, 1.0), 3);
}

TEST(MoeLayerPattern, ReadsIntegersAndListExpressions) {
    using mt::nn::MoeLayerPattern;
    EXPECT_EQ(MoeLayerPattern::parse("1", 3).moe, (std::vector<bool>{true, true, true}));
    EXPECT_EQ(MoeLayerPattern::parse("2", 4).moe, (std::vector<bool>{true, false, true, false}));
    EXPECT_EQ(MoeLayerPattern::parse("[0,1]", 2).moe, (std::vector<bool>{false, true}));
    EXPECT_EQ(MoeLayerPattern::parse("([1]*3+[0]*1)*2", 8).count(), 6);
    EXPECT_EQ(MoeLayerPattern::parse("([0] + [1]*3)", 4).moe,
              (std::vector<bool>{false, true, true, true}));
    EXPECT_EQ(MoeLayerPattern::parse("2*[1, 0]", 4).count(), 2);
    EXPECT_THROW(MoeLayerPattern::parse("[1,0]", 3), mt::Error);      // wrong length
    EXPECT_THROW(MoeLayerPattern::parse("[1,2]", 2), mt::Error);      // not 0/1
    EXPECT_THROW(MoeLayerPattern::parse("[1]*2+", 2), mt::Error);     // malformed
    EXPECT_THROW(MoeLayerPattern::parse("import os", 2), mt::Error);  // not an expression
    EXPECT_THROW(MoeLayerPattern::parse("0", 2), mt::Error);
}

// A MoE layer of 4 experts over hidden 8: SwiGLU (Llama style) or GeLU experts.
mt::nn::TransformerConfig moe_config(bool swiglu) {
    mt::nn::TransformerConfig c;
    c.hidden_size = 8;
    c.ffn_hidden_size = 12;
    c.num_attention_heads = 4;
    c.num_query_groups = 2;
    c.normalization = mt::nn::NormKind::rms_norm;
    c.activation = swiglu ? mt::ops::UnaryOp::silu : mt::ops::UnaryOp::gelu;
    c.gated_linear_unit = swiglu;
    c.add_bias_linear = false;
    c.rotary = true;
    c.hidden_dropout = 0.f;
    c.attention_dropout = 0.f;
    c.attention_block = 4;
    c.dtype = DType::f64;
    c.moe.router.num_experts = 4;
    c.moe.router.topk = 2;
    c.moe.ffn_hidden_size = 6;
    return c;
}

mt::nn::LayerSpec moe_spec() {
    return mt::nn::moe_layer_specs(mt::nn::MoeLayerPattern::parse("1", 1), nullptr)(0);
}

// `start`: the forward's dropout context (training with a seed: the router's input jitter).
void check_moe_layer_grads(const mt::nn::TransformerConfig& config, unsigned seed,
                           const mt::nn::DropoutContext& start = {false, 0, 0}) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(seed);
    mt::nn::TransformerLayer layer("decoder.layers.0", config, moe_spec(), *be);
    std::vector<mt::nn::Parameter*> params;
    layer.collect_parameters(params);
    for (auto* p : params) mt::test::fill_random(p->value, rng, -0.5, 0.5);
    Tensor x = random_like({2, 6, 8}, DType::f64, rng);
    mt::test::expect_module_grads_match(layer, x, params, start, rng);
}

TEST(MoeLayer, DroplessGradientsMatchFiniteDifferences) {
    mt::nn::TransformerConfig c = moe_config(true);
    c.moe.shared_expert_ffn_size = 5;
    check_moe_layer_grads(c, 31);
}

TEST(MoeLayer, CapacityAndScaledPreSoftmaxGradientsMatchFiniteDifferences) {
    mt::nn::TransformerConfig c = moe_config(false);
    c.moe.router.capacity_factor = 1.0;
    c.moe.router.pre_softmax = true;
    c.moe.router.topk_scaling_factor = 1.5;
    check_moe_layer_grads(c, 32);
}

TEST(MoeLayer, SigmoidGroupLimitedGradientsMatchFiniteDifferences) {
    mt::nn::TransformerConfig c = moe_config(true);
    c.moe.router.score_function = mt::nn::ScoreFunction::sigmoid;
    c.moe.router.num_groups = 2;
    c.moe.router.group_topk = 1;
    c.moe.grouped_gemm = true;
    check_moe_layer_grads(c, 33);
}

// --moe-apply-probs-on-input (Llama 4): top-1 routing weights scale the experts' inputs, the
// sigmoid scores' gradient flowing back through them; SwiGLU and GeLU experts.
TEST(MoeLayer, ProbsOnInputGradientsMatchFiniteDifferences) {
    for (const bool swiglu : {true, false}) {
        mt::nn::TransformerConfig c = moe_config(swiglu);
        c.moe.router.topk = 1;
        c.moe.router.score_function = mt::nn::ScoreFunction::sigmoid;
        c.moe.probs_on_input = true;
        check_moe_layer_grads(c, swiglu ? 34 : 35);
    }
}

// Megatron-DeepSpeed's MoE layers (DeepSpeed's gate, GShardGating) in training: top-1 with the
// random token selection dropping tokens over its capacity (the tokens kept are a function of
// the draws, not of the inputs), and PR-MoE (top-2, the second expert the second largest, tokens
// over capacity dropped by position; a residual MLP mixed in by its coefficient). (The
// load-balancing loss's gradient: DeepSpeedGateGradientsMatchFiniteDifferences.)
TEST(MoeLayer, DeepSpeedGatingGradientsMatchFiniteDifferences) {
    for (const int topk : {1, 2}) {
        mt::nn::TransformerConfig c = moe_config(false);
        c.add_bias_linear = true;
        c.moe.router.topk = topk;
        c.moe.router.gshard.enabled = true;
        c.moe.router.gshard.train_capacity_factor = 0.3;
        c.moe.router.gshard.min_capacity = 1;
        c.moe.router.gshard.sample_second_expert = false;
        c.moe.residual_mlp = topk == 2;
        check_moe_layer_grads(c, 36 + unsigned(topk), {true, 5, 0});
    }
}

// Per-layer expert counts (Megatron-DeepSpeed's --num-experts list): layers interval, 2 x
// interval, ... are MoE layers, each with its count; its assertion on the list's length.
TEST(MoeLayerPattern, ReadsMegatronDeepSpeedsExpertCounts) {
    using mt::nn::MoeLayerPattern;
    const auto p = MoeLayerPattern::deepspeed({2, 4}, 2, 4);
    EXPECT_EQ(p.moe, (std::vector<bool>{false, true, false, true}));
    EXPECT_EQ(p.experts, (std::vector<int64_t>{0, 2, 0, 4}));
    EXPECT_EQ(MoeLayerPattern::deepspeed({8}, 1, 2).experts, (std::vector<int64_t>{8, 8}));
    // One expert: a dense layer.
    EXPECT_EQ(MoeLayerPattern::deepspeed({1, 4}, 1, 2).moe, (std::vector<bool>{false, true}));
    EXPECT_THROW(MoeLayerPattern::deepspeed({2, 4, 8}, 2, 4), mt::Error);
}

// Megatron-core's MoE layer: a separate pre_mlp_layernorm (also with Transformer Engine's
// names), then the router, the experts (each one's fc1 and fc2; grouped: all fc1, then all fc2)
// and the shared experts.
TEST(MoeLayer, ParameterNamesFollowMegatronCore) {
    auto be = mt::make_cpu_backend();
    for (bool grouped : {false, true}) {
        mt::nn::TransformerConfig c = moe_config(true);
        c.moe.grouped_gemm = grouped;
        c.moe.router.num_experts = 2;
        c.moe.shared_expert_ffn_size = 4;
        mt::nn::TransformerLayer layer("decoder.layers.1", c, moe_spec(), *be);
        std::vector<mt::nn::Parameter*> params;
        layer.collect_parameters(params);
        std::vector<std::string> names;
        for (auto* p : params) names.push_back(p->name);
        const std::string l = "decoder.layers.1.";
        std::vector<std::string> experts =
            grouped ? std::vector<std::string>{l + "mlp.experts.linear_fc1.weight0",
                                               l + "mlp.experts.linear_fc1.weight1",
                                               l + "mlp.experts.linear_fc2.weight0",
                                               l + "mlp.experts.linear_fc2.weight1"}
                    : std::vector<std::string>{l + "mlp.experts.local_experts.0.linear_fc1.weight",
                                               l + "mlp.experts.local_experts.0.linear_fc2.weight",
                                               l + "mlp.experts.local_experts.1.linear_fc1.weight",
                                               l + "mlp.experts.local_experts.1.linear_fc2.weight"};
        std::vector<std::string> want{l + "self_attention.linear_proj.weight",
                                      l + "self_attention.linear_qkv.layer_norm_weight",
                                      l + "self_attention.linear_qkv.weight",
                                      l + "pre_mlp_layernorm.weight", l + "mlp.router.weight"};
        want.insert(want.end(), experts.begin(), experts.end());
        want.push_back(l + "mlp.shared_experts.linear_fc1.weight");
        want.push_back(l + "mlp.shared_experts.linear_fc2.weight");
        EXPECT_EQ(names, want);
        EXPECT_EQ(params[5]->value.shape(), (mt::Shape{12, 8}));  // an expert's [gate; up]
    }
}

// core_v0.19's GPT-OSS MoE: biases in the router and in each expert's fc1 and fc2 (fc2's weighed
// by the prob), quick GeGLU experts with an offset and a clamp; SequentialMLP and TEGroupedMLP
// alike, and with the probs on the input (fc2's bias then unweighed).
TEST(MoeLayer, BiasedQuickGegluExpertsGradientsMatchFiniteDifferences) {
    for (const bool grouped : {false, true}) {
        mt::nn::TransformerConfig c = moe_config(true);
        c.add_bias_linear = true;
        c.activation = mt::ops::UnaryOp::quick_gelu;
        c.glu_linear_offset = 1.0f;
        c.activation_clamp = 7.0f;
        c.moe.grouped_gemm = grouped;
        check_moe_layer_grads(c, grouped ? 36 : 37);
    }
    mt::nn::TransformerConfig c = moe_config(false);
    c.add_bias_linear = true;
    c.moe.router.topk = 1;
    c.moe.router.score_function = mt::nn::ScoreFunction::sigmoid;
    c.moe.probs_on_input = true;
    check_moe_layer_grads(c, 38);
}

// With biases, the router's follows its weight and each expert's linear has its bias beside its
// weight (Transformer Engine's GroupedLinear: weight0, bias0, weight1, bias1, ...).
TEST(MoeLayer, BiasNamesFollowMegatronCore) {
    auto be = mt::make_cpu_backend();
    for (bool grouped : {false, true}) {
        mt::nn::TransformerConfig c = moe_config(true);
        c.add_bias_linear = true;
        c.moe.grouped_gemm = grouped;
        c.moe.router.num_experts = 2;
        mt::nn::TransformerLayer layer("decoder.layers.0", c, moe_spec(), *be);
        std::vector<mt::nn::Parameter*> params;
        layer.collect_parameters(params);
        std::vector<std::string> names;
        for (auto* p : params)
            if (p->name.find(".mlp.") != std::string::npos) names.push_back(p->name);
        const std::string m = "decoder.layers.0.mlp.";
        const std::vector<std::string> want =
            grouped ? std::vector<std::string>{m + "router.weight",
                                               m + "router.bias",
                                               m + "experts.linear_fc1.weight0",
                                               m + "experts.linear_fc1.bias0",
                                               m + "experts.linear_fc1.weight1",
                                               m + "experts.linear_fc1.bias1",
                                               m + "experts.linear_fc2.weight0",
                                               m + "experts.linear_fc2.bias0",
                                               m + "experts.linear_fc2.weight1",
                                               m + "experts.linear_fc2.bias1"}
                    : std::vector<std::string>{m + "router.weight",
                                               m + "router.bias",
                                               m + "experts.local_experts.0.linear_fc1.weight",
                                               m + "experts.local_experts.0.linear_fc1.bias",
                                               m + "experts.local_experts.0.linear_fc2.weight",
                                               m + "experts.local_experts.0.linear_fc2.bias",
                                               m + "experts.local_experts.1.linear_fc1.weight",
                                               m + "experts.local_experts.1.linear_fc1.bias",
                                               m + "experts.local_experts.1.linear_fc2.weight",
                                               m + "experts.local_experts.1.linear_fc2.bias"};
        EXPECT_EQ(names, want);
    }
}

// --moe-input-jitter-eps: in training the router sees its input times U(1 - eps, 1 + eps) noise
// (the experts the input itself), drawn from the dropout stream, so a re-forward from the same
// counters replays it and the gradients match finite differences; it changes the routing's
// weights, and evaluation does not jitter.
TEST(MoeLayer, InputJitterGradientsMatchFiniteDifferences) {
    mt::nn::TransformerConfig c = moe_config(true);
    c.moe.router.input_jitter_eps = 0.3;
    check_moe_layer_grads(c, 35, {true, 11, 0});

    auto be = mt::make_cpu_backend();
    std::mt19937 rng(36);
    mt::nn::TransformerLayer jittered("decoder.layers.0", c, moe_spec(), *be);
    c.moe.router.input_jitter_eps = 0;
    mt::nn::TransformerLayer plain("decoder.layers.0", c, moe_spec(), *be);
    std::vector<mt::nn::Parameter*> a, b;
    jittered.collect_parameters(a);
    plain.collect_parameters(b);
    for (size_t i = 0; i < a.size(); ++i) {
        mt::test::fill_random(a[i]->value, rng, -0.5, 0.5);
        b[i]->value.copy_from(a[i]->value);
    }
    const Tensor x = random_like({2, 6, 8}, DType::f64, rng);
    auto forward = [&](const mt::nn::TransformerLayer& layer, bool training) {
        mt::nn::DropoutContext ctx{training, 11, 0};
        return layer.forward(x, ctx, nullptr);
    };
    const Tensor train_jittered = forward(jittered, true), train_plain = forward(plain, true);
    double differs = 0;
    for (int64_t i = 0; i < x.numel(); ++i)
        differs = std::max(
            differs, std::fabs(train_jittered.data<double>()[i] - train_plain.data<double>()[i]));
    EXPECT_GT(differs, 1e-4);
    const Tensor eval_jittered = forward(jittered, false), eval_plain = forward(plain, false);
    for (int64_t i = 0; i < x.numel(); ++i)
        ASSERT_EQ(eval_jittered.data<double>()[i], eval_plain.data<double>()[i]) << i;
}

// --moe-router-enable-expert-bias: the router's f32 buffer "router.expert_bias" (zeros) steers
// which experts the sigmoid top-k picks, training forwards count the tokens each expert got (not
// evaluation ones), and the update moves each bias by the rate towards the under-used experts.
TEST(MoeLayer, ExpertBiasSteersRoutingAndFollowsTheLoad) {
    auto be = mt::make_cpu_backend();
    std::mt19937 rng(37);
    mt::nn::TransformerConfig c = moe_config(true);
    c.dtype = DType::f32;
    c.moe.router.score_function = mt::nn::ScoreFunction::sigmoid;
    c.moe.router.expert_bias = true;
    c.moe.router.bias_update_rate = 0.25;
    auto tracker = std::make_shared<mt::nn::MoeTracker>(c.moe.router, 1, 1);
    const mt::nn::LayerSpec spec =
        mt::nn::moe_layer_specs(mt::nn::MoeLayerPattern::parse("1", 1), tracker)(0);
    mt::nn::TransformerLayer layer("decoder.layers.0", c, spec, *be);
    std::vector<mt::nn::Parameter*> params, buffers;
    layer.collect_parameters(params);
    layer.collect_buffers(buffers);
    ASSERT_EQ(buffers.size(), 1u);
    mt::nn::Parameter& bias = *buffers[0];
    EXPECT_EQ(bias.name, "decoder.layers.0.mlp.router.expert_bias");
    EXPECT_EQ(bias.value.dtype(), DType::f32);
    EXPECT_EQ(bias.value.shape(), (mt::Shape{4}));
    EXPECT_FALSE(bias.grad.defined());
    for (auto* p : params) mt::test::fill_random(p->value, rng, -0.5, 0.5);
    const Tensor x = random_like({2, 6, 8}, DType::f32, rng);
    auto forward = [&](bool with_backward) {
        mt::nn::DropoutContext ctx{true, 1, 0};
        mt::nn::TransformerLayer::Saved saved;
        layer.forward(x, ctx, with_backward ? &saved : nullptr);
    };
    forward(false);  // an evaluation-like pass (nothing kept) counts nothing
    EXPECT_EQ(tracker->routed_tokens(), std::vector<double>(4, 0.0));
    forward(true);
    const std::vector<double> tokens = tracker->routed_tokens();
    double total = 0;
    for (double t : tokens) total += t;
    EXPECT_EQ(total, 12.0 * 2);  // 12 tokens, top-2
    tracker->update_expert_bias(*be, tokens);
    EXPECT_EQ(tracker->routed_tokens(), std::vector<double>(4, 0.0));
    for (int e = 0; e < 4; ++e) {
        const double offset = total / 4 - tokens[size_t(e)];
        EXPECT_EQ(bias.value.data<float>()[e], offset > 0   ? 0.25f
                                               : offset < 0 ? -0.25f
                                                            : 0.0f)
            << e;
    }
    // A bias far above the sigmoid's range sends every token to that expert.
    bias.value.data<float>()[3] = 10.0f;
    forward(true);
    EXPECT_EQ(tracker->routed_tokens()[3], 12.0);
}

// One process: the alltoall dispatcher's moves are the local permutation, the same layer.
TEST(MoeLayer, AlltoallDispatcherGradientsMatchFiniteDifferences) {
    mt::nn::TransformerConfig c = moe_config(true);
    c.moe.dispatcher = mt::nn::DispatcherKind::alltoall;
    c.moe.router.capacity_factor = 1.0;
    check_moe_layer_grads(c, 34);
}

}  // namespace
