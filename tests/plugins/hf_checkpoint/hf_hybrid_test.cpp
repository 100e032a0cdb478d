// Hugging Face Mamba2ForCausalLM and NemotronHForCausalLM folders, with and without MoE layers
// (tests/fixtures/hf/make_hybrid_fixtures.py), as Megatron's MambaModel: the flags their
// config.json implies, the logits and losses transformers computes, the same logits through the
// recurrent Mamba state and the KV cache, transformers' greedy tokens and log-probabilities, and
// saving back the very model.safetensors transformers wrote with a config.json that reads back the
// same.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "hf_checkpoint.h"
#include "hf_config.h"
#include "hf_fixtures.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/infer/generator.h"
#include "mt/infer/model_loader.h"
#include "mt/nn/dropout.h"
#include "mt/nn/inference_state.h"
#include "mt/registry.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::read_file;
using mt::test::TempDir;

struct Reference {
    Tensor tokens, labels;
    std::vector<double> losses, logits;  // [B*T], [B*T*V]
    std::vector<int32_t> prompt, greedy;
    std::vector<double> greedy_logprobs;
};

Reference reference(const std::string& name) {
    simdjson::dom::parser parser;
    simdjson::dom::element m = parser.load(fixture("hybrid_expected.json").string())[name];
    Reference r;
    r.tokens = ids(m["tokens"].get_array());
    r.labels = ids(m["labels"].get_array());
    for (auto row : m["losses"].get_array())
        for (auto x : row.get_array()) r.losses.push_back(x.get_double());
    for (auto row : m["logits"].get_array())
        for (auto position : row.get_array())
            for (auto x : position.get_array()) r.logits.push_back(x.get_double());
    for (auto x : m["prompt_ids"].get_array()) r.prompt.push_back(int32_t(x.get_int64()));
    for (auto x : m["greedy_ids"].get_array()) r.greedy.push_back(int32_t(x.get_int64()));
    for (auto x : m["greedy_logprobs"].get_array()) r.greedy_logprobs.push_back(x.get_double());
    return r;
}

infer::LoadedModel load(const std::string& name) {
    auto family = Registry::global().create_model("mamba");
    return infer::load_for_inference(Registry::global(), *family, fixture(name), {});
}

// Logits [.., V] equal `want` from element `first` on, to 1e-5 (absolute and relative).
void expect_logits(const Tensor& logits, const std::vector<double>& want, size_t first,
                   const std::string& what) {
    const Tensor c = logits.contiguous();
    ASSERT_LE(first + size_t(c.numel()), want.size()) << what;
    for (int64_t i = 0; i < c.numel(); ++i) {
        const double expect = want[first + size_t(i)];
        ASSERT_NEAR(c.data<float>()[i], expect, 1e-5 * (1 + std::abs(expect)))
            << what << " logit " << first + size_t(i);
    }
}

class HfHybrid : public ::testing::TestWithParam<const char*> {};

TEST_P(HfHybrid, GivesTransformersLogitsAndLosses) {
    const Reference ref = reference(GetParam());
    infer::LoadedModel m = load(GetParam());
    EXPECT_EQ(m.format, "hf");
    expect_logits(m.model->logits(ref.tokens, nullptr), ref.logits, 0, "whole batch");
    nn::DropoutContext ctx{false, 0, 0};
    const Tensor losses =
        loss_term(m.model->forward({{"tokens", ref.tokens}, {"labels", ref.labels}}, ctx, nullptr),
                  "lm loss")
            .values.contiguous();
    ASSERT_EQ(losses.numel(), int64_t(ref.losses.size()));
    for (size_t i = 0; i < ref.losses.size(); ++i)
        EXPECT_NEAR(losses.data<float>()[i], ref.losses[i], 1e-5 * ref.losses[i]) << i;
}

// The first row prefilled up to 5 tokens, then one token at a time over the recurrent state.
TEST_P(HfHybrid, DecodingOverTheStateGivesTheWholeSequencesLogits) {
    const Reference ref = reference(GetParam());
    infer::LoadedModel m = load(GetParam());
    const int64_t T = ref.tokens.size(1), V = int64_t(ref.logits.size()) / ref.tokens.numel();
    const Tensor row = ref.tokens.slice(0, 0, 1);
    auto state = m.model->make_inference_state(1, T);
    const int64_t split = 5;
    expect_logits(m.model->logits(row.slice(1, 0, split).contiguous(), state.get(), 0), ref.logits,
                  0, "prefill");
    for (int64_t t = split; t < T; ++t)
        expect_logits(m.model->logits(row.slice(1, t, t + 1).contiguous(), state.get(), 1),
                      ref.logits, size_t(t * V), "decode");
    EXPECT_EQ(state->length(), T);
}

// A prompt longer than a prefill piece (GptModel::kPrefillPiece) goes through the state in
// pieces: the Mamba states, the key/value cache and the MoE layers carry across them, and the
// logits are those of one forward over the whole prompt; asked for the last rows, those rows.
TEST_P(HfHybrid, PrefillInPiecesGivesTheWholeForwardsLogits) {
    infer::LoadedModel m = load(GetParam());
    const int64_t T = 1100, V = 128;
    std::vector<int64_t> prompt(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) prompt[size_t(t)] = (t * 37 + 11) % V;
    const Tensor tokens = host_tensor(std::move(prompt), {1, T});
    const Tensor whole = m.model->logits(tokens, nullptr, 0).contiguous();
    auto state = m.model->make_inference_state(1, T);
    const Tensor pieces = m.model->logits(tokens, state.get(), 0).contiguous();
    ASSERT_EQ(pieces.shape(), whole.shape());
    EXPECT_EQ(state->length(), T);
    for (int64_t i = 0; i < whole.numel(); ++i) {
        const float want = whole.data<float>()[i];
        ASSERT_NEAR(pieces.data<float>()[i], want, 1e-4 * (1 + std::abs(want))) << "logit " << i;
    }
    auto fresh = m.model->make_inference_state(1, T);
    const Tensor last = m.model->logits(tokens, fresh.get(), 3).contiguous();
    ASSERT_EQ(last.shape(), Shape({1, 3, whole.size(2)}));
    for (int64_t i = 0; i < last.numel(); ++i) {  // (the output GEMM over 3 rows, not 76)
        const float want = pieces.data<float>()[pieces.numel() - last.numel() + i];
        EXPECT_NEAR(last.data<float>()[i], want, 1e-6 * (1 + std::abs(want))) << i;
    }
}

TEST_P(HfHybrid, GreedyGenerationGivesTransformersTokensAndLogProbs) {
    const Reference ref = reference(GetParam());
    infer::LoadedModel m = load(GetParam());
    infer::GenerationRequest request;
    request.prompts = {ref.prompt};
    request.tokens_to_generate = int64_t(ref.greedy.size());
    request.sampling.top_k = 1;
    request.return_log_probs = true;
    infer::GenerationTokens ids{-1, 128, {}, {}, {}};  // an EOD no sample equals
    infer::SamplingRng rng(1);
    const infer::GenerationResult out = infer::generate(*m.model, request, ids, rng);
    const std::vector<int32_t>& tokens = out.tokens[0];
    ASSERT_EQ(tokens.size(), ref.prompt.size() + ref.greedy.size());
    EXPECT_EQ(std::vector<int32_t>(tokens.begin() + long(ref.prompt.size()), tokens.end()),
              ref.greedy);
    for (size_t i = 0; i < ref.greedy.size(); ++i)
        EXPECT_NEAR(out.log_probs[0][ref.prompt.size() - 1 + i], ref.greedy_logprobs[i], 1e-5)
            << "generated token " << i;
}

// Loaded and saved again: transformers' own model.safetensors, and a config.json that reads
// back to the same model.
TEST_P(HfHybrid, SavedAgainGivesTransformersFileAndConfig) {
    TempDir dir;
    HfCheckpoint format;
    format.save(dir / "out", format.load(fixture(GetParam())));
    EXPECT_TRUE(read_file(dir / "out/model.safetensors") ==
                read_file(fixture(GetParam()) / "model.safetensors"));
    const HfConfig a = read_hf_config(fixture(GetParam())), b = read_hf_config(dir / "out");
    EXPECT_EQ(b.model_type, a.model_type);
    EXPECT_EQ(hf_model_args(b), hf_model_args(a));
}

INSTANTIATE_TEST_SUITE_P(Folders, HfHybrid,
                         ::testing::Values("mamba2", "nemotron_h", "nemotron_h_moe"));

TEST(HfHybridConfig, ImpliesMegatronsMambaFlags) {
    const ModelArgs mamba = hf_model_args(read_hf_config(fixture("mamba2")));
    EXPECT_EQ(mamba.at("hybrid-override-pattern"), "MMM");
    EXPECT_EQ(mamba.at("mamba-num-heads"), "8");
    EXPECT_EQ(mamba.at("mamba-head-dim"), "8");
    EXPECT_EQ(mamba.at("mamba-num-groups"), "2");
    EXPECT_EQ(mamba.at("mamba-state-dim"), "8");
    EXPECT_EQ(mamba.at("position-embedding-type"), "none");
    EXPECT_EQ(mamba.count("untie-embeddings-and-output-weights"), 0u);  // tied
    const ModelArgs nemotron = hf_model_args(read_hf_config(fixture("nemotron_h")));
    EXPECT_EQ(nemotron.at("hybrid-override-pattern"), "M*M-");
    EXPECT_EQ(nemotron.at("num-attention-heads"), "4");
    EXPECT_EQ(nemotron.at("num-query-groups"), "2");
    EXPECT_EQ(nemotron.at("kv-channels"), "8");
    EXPECT_EQ(nemotron.at("ffn-hidden-size"), "48");
    EXPECT_EQ(nemotron.count("squared-relu"), 1u);
    EXPECT_EQ(nemotron.count("untie-embeddings-and-output-weights"), 1u);
    // The args of a converted checkpoint pick the Mamba family.
    EXPECT_TRUE(megatron_mamba_model(hf_checkpoint_args(read_hf_config(fixture("nemotron_h")))));
    // NemotronHMoE as Megatron's sigmoid router with the expert bias, its groups and scaling.
    const ModelArgs moe = hf_model_args(read_hf_config(fixture("nemotron_h_moe")));
    EXPECT_EQ(moe.at("hybrid-override-pattern"), "ME*E");
    EXPECT_EQ(moe.at("num-experts"), "8");
    EXPECT_EQ(moe.at("moe-router-topk"), "2");
    EXPECT_EQ(moe.at("moe-ffn-hidden-size"), "16");
    EXPECT_EQ(moe.at("moe-shared-expert-intermediate-size"), "24");
    EXPECT_EQ(moe.at("moe-router-score-function"), "sigmoid");
    EXPECT_EQ(moe.count("moe-router-enable-expert-bias"), 1u);
    EXPECT_EQ(moe.at("moe-router-num-groups"), "2");
    EXPECT_EQ(moe.at("moe-router-group-topk"), "1");
    EXPECT_EQ(moe.at("moe-router-topk-scaling-factor"), "2.5");
}

// config.json keys whose network Megatron's MambaModel does not compute are named.
TEST(HfHybridConfig, RefusesWhatMegatronsMixerDoesNotComputeNamingTheKey) {
    const std::string nemotron = read_file(fixture("nemotron_h") / "config.json");
    const std::string mamba2 = read_file(fixture("mamba2") / "config.json");
    const std::string moe = read_file(fixture("nemotron_h_moe") / "config.json");
    const std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases = {
        {nemotron, "\"mlp_hidden_act\": \"relu2\"", "\"mlp_hidden_act\": \"silu\"",
         "'mlp_hidden_act' silu"},
        {moe, "\"norm_topk_prob\": true", "\"norm_topk_prob\": false", "'norm_topk_prob' 0"},
        {moe, "\"topk_group\": 1", "\"topk_group\": 2", "'topk_group' 2"},
        {moe, "\"moe_latent_size\": null", "\"moe_latent_size\": 8", "'moe_latent_size'"},
        {nemotron, "\"conv_kernel\": 4", "\"conv_kernel\": 3", "'conv_kernel' 3"},
        {nemotron, "\"mamba_proj_bias\": false", "\"mamba_proj_bias\": true", "'mamba_proj_bias'"},
        {mamba2, "\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 1e-06",
         "'layer_norm_epsilon' 1e-06"},
        {mamba2, "\"time_step_limit\": [\n    0.0,", "\"time_step_limit\": [\n    0.01,",
         "'time_step_limit'"},
        {mamba2, "\"use_conv_bias\": true", "\"use_conv_bias\": false", "'use_conv_bias'"},
        {mamba2, "\"expand\": 2", "\"expand\": 3", "'expand'"},
    };
    for (const auto& [text, from, to, part] : cases) {
        TempDir dir;
        const size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        std::string changed = text;
        changed.replace(at, from.size(), to);
        mt::test::write_file(dir / "config.json", changed);
        const std::string error = error_of([&] { read_hf_config(dir.path()); });
        EXPECT_NE(error.find((dir / "config.json").string()), std::string::npos) << error;
        EXPECT_NE(error.find(part), std::string::npos) << error;
    }
}

// Megatron args a Hugging Face hybrid model cannot hold are named in --saver hf.
TEST(HfHybridExport, RefusesWhatTheFoldersCannotHoldNamingTheArg) {
    HfCheckpoint format;
    const CheckpointState nemotron = format.load(fixture("nemotron_h"));
    const std::vector<std::tuple<std::string, ArgValue, std::string>> cases = {
        {"normalization", std::string("LayerNorm"), "normalization=LayerNorm"},
        {"add_bias_linear", true, "add_bias_linear=True"},
        {"squared_relu", false, "squared_relu=False"},
        {"qk_layernorm", true, "qk_layernorm=set"},
        {"position_embedding_type", std::string("rope"), "position_embedding_type=rope"},
        {"norm_epsilon", 1e-6, "norm_epsilon=9.9999999999999995e-07"},
    };
    const CheckpointState moe = format.load(fixture("nemotron_h_moe"));
    const std::vector<std::tuple<std::string, ArgValue, std::string>> moe_cases = {
        {"moe_router_score_function", std::string("softmax"), "moe_router_score_function=softmax"},
        {"moe_router_enable_expert_bias", false, "moe_router_enable_expert_bias=False"},
        {"moe_router_group_topk", int64_t(2), "moe_router_group_topk=2"},
        {"moe_shared_expert_gate", true, "moe_shared_expert_gate=set"},
    };
    for (const auto& [from, list] : {std::pair{&nemotron, &cases}, std::pair{&moe, &moe_cases}})
        for (const auto& [name, value, part] : *list) {
            TempDir dir;
            CheckpointState state = *from;
            set_arg(state.args, name, value);
            const std::string error = error_of([&] { format.save(dir / "out", state); });
            EXPECT_NE(error.find("not supported yet: "), std::string::npos) << error;
            EXPECT_NE(error.find(part), std::string::npos) << error;
            EXPECT_FALSE(fs::exists(dir / "out")) << name;
        }
}

}  // namespace
}  // namespace mt::plugins::hf
