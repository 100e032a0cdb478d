// Inference on Hugging Face weights: the tiny GPT-2, Llama (GQA, rope), Mistral, Qwen2 (QKV
// biases), Qwen3 (q/k norms), Qwen3-MoE, DeepSeek-V3 (MLA: decoding over cached latents), and
// sliding-window Mistral and Qwen2 (make_sliding_window_fixtures.py) folders of
// tests/fixtures/hf loaded by infer::load_for_inference (format detected, model built from the
// folder's config) give transformers' logits for whole prompts and, token by token through the
// KV cache, the same logits again; batched greedy generation with prompts of different lengths
// reproduces transformers' greedy continuations (tests/fixtures/infer/make_fixtures.py).
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <vector>

#include "mt/infer/generator.h"
#include "mt/infer/model_loader.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "test_support.h"

namespace mt::infer {
namespace {

struct Reference {
    std::vector<std::vector<int32_t>> prompts, greedy;
    std::vector<std::vector<std::vector<double>>> logits;       // [prompt][t][v]
    std::vector<std::vector<std::vector<double>>> logits_bf16;  // the model in bf16; or none
};

// [prompt][t][v] from a JSON array of arrays of arrays.
std::vector<std::vector<std::vector<double>>> logits_of(simdjson::dom::array prompts) {
    std::vector<std::vector<std::vector<double>>> out;
    for (auto prompt : prompts) {
        out.emplace_back();
        for (auto row : prompt.get_array()) {
            out.back().emplace_back();
            for (auto x : row.get_array()) out.back().back().push_back(x.get_double());
        }
    }
    return out;
}

Reference reference(const std::string& name, int64_t* new_tokens) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc =
        parser.load((mt::test::fixtures_dir() / "infer" / "expected.json").string());
    *new_tokens = doc["new_tokens"].get_int64();
    simdjson::dom::element m = doc["models"][name];
    Reference r;
    auto ids = [](simdjson::dom::array rows) {
        std::vector<std::vector<int32_t>> out;
        for (auto row : rows) {
            out.emplace_back();
            for (auto x : row.get_array()) out.back().push_back(int32_t(x.get_int64()));
        }
        return out;
    };
    r.prompts = ids(m["prompts"].get_array());
    r.greedy = ids(m["greedy"].get_array());
    r.logits = logits_of(m["logits"].get_array());
    simdjson::dom::array bf16;
    if (!m["logits_bf16"].get_array().get(bf16)) r.logits_bf16 = logits_of(bf16);
    return r;
}

LoadedModel load(const std::string& name, DType dtype = DType::f32) {
    auto family = Registry::global().create_model("gpt");
    return load_for_inference(Registry::global(), *family, mt::test::fixtures_dir() / "hf" / name,
                              {}, "", dtype);
}

Tensor row_tensor(const std::vector<int32_t>& ids) {
    Tensor t = Tensor::empty({1, int64_t(ids.size())}, DType::i64);
    for (size_t i = 0; i < ids.size(); ++i) t.data<int64_t>()[i] = ids[i];
    return t;
}

// logits [1, n, V] equal the reference rows [first, first + n) to 1e-4 (absolute, relative).
void expect_logits(const Tensor& logits, const std::vector<std::vector<double>>& want, size_t first,
                   const std::string& what) {
    const int64_t n = logits.size(1), V = logits.size(2);
    ASSERT_EQ(V, int64_t(want[0].size())) << what;
    for (int64_t t = 0; t < n; ++t)
        for (int64_t v = 0; v < V; ++v) {
            const double expect = want[first + size_t(t)][size_t(v)];
            ASSERT_NEAR(logits.data<float>()[t * V + v], expect, 1e-4 * (1 + std::abs(expect)))
                << what << " position " << first + size_t(t) << " id " << v;
        }
}

class HfInference : public ::testing::TestWithParam<const char*> {};

TEST_P(HfInference, LogitsEqualTransformersWholeAndThroughTheCache) {
    int64_t new_tokens = 0;
    const Reference ref = reference(GetParam(), &new_tokens);
    LoadedModel m = load(GetParam());
    EXPECT_EQ(m.format, "hf");
    for (size_t p = 0; p < ref.prompts.size(); ++p) {
        const auto& prompt = ref.prompts[p];
        expect_logits(m.model->logits(row_tensor(prompt), nullptr, 0), ref.logits[p], 0,
                      "whole prompt " + std::to_string(p));
        // Prefill of all but the last two tokens, then one token at a time.
        auto cache = m.model->make_inference_state(1, int64_t(prompt.size()));
        const size_t split = prompt.size() - 2;
        std::vector<int32_t> head(prompt.begin(), prompt.begin() + long(split));
        expect_logits(m.model->logits(row_tensor(head), cache.get(), 0), ref.logits[p], 0,
                      "prefill " + std::to_string(p));
        for (size_t t = split; t < prompt.size(); ++t) {
            expect_logits(m.model->logits(row_tensor({prompt[t]}), cache.get(), 1), ref.logits[p],
                          t, "decode " + std::to_string(p));
        }
        EXPECT_EQ(cache->length(), int64_t(prompt.size()));
    }
}

TEST_P(HfInference, BatchedGreedyGenerationEqualsTransformers) {
    int64_t new_tokens = 0;
    const Reference ref = reference(GetParam(), &new_tokens);
    LoadedModel m = load(GetParam());
    GenerationRequest request;
    request.prompts = ref.prompts;
    request.tokens_to_generate = new_tokens;
    request.sampling.top_k = 1;
    request.return_log_probs = true;
    // An EOD no sample can equal: transformers ran without an EOS stop.
    GenerationTokens ids{-1, 128, {}, {}, {}};
    SamplingRng rng(1);
    GenerationResult out = generate(*m.model, request, ids, rng);
    size_t longest = 0;
    for (const auto& p : ref.prompts) longest = std::max(longest, p.size());
    ASSERT_EQ(out.tokens.size(), ref.prompts.size());
    for (size_t p = 0; p < ref.prompts.size(); ++p) {
        // Megatron's static batch: every row runs to the longest prompt + tokens_to_generate.
        ASSERT_EQ(out.tokens[p].size(), longest + size_t(new_tokens));
        std::vector<int32_t> generated(out.tokens[p].begin() + long(ref.prompts[p].size()),
                                       out.tokens[p].end());
        EXPECT_EQ(generated, ref.greedy[p]) << "prompt " << p;
        // The prompt's log-probs come from the prompt's own logits.
        ASSERT_EQ(out.log_probs[p].size(), out.tokens[p].size() - 1);
        for (size_t t = 0; t + 1 < ref.prompts[p].size(); ++t) {
            const auto& row = ref.logits[p][t];
            double max = row[0], total = 0;
            for (double v : row) max = std::max(max, v);
            for (double v : row) total += std::exp(v - max);
            const double want = row[size_t(ref.prompts[p][t + 1])] - max - std::log(total);
            EXPECT_NEAR(out.log_probs[p][t], want, 1e-4) << "prompt " << p << " position " << t;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Folders, HfInference,
                         ::testing::Values("gpt2", "llama", "mistral", "qwen2", "qwen3",
                                           "qwen3_moe", "deepseek_v3", "mistral_swa", "qwen2_swa",
                                           "gpt_oss", "gemma3"));

// In bf16 (the weights cast, the forward in bf16 with f32 accumulation) the logits equal
// transformers' model cast to bfloat16 to 1e-2 (tests/fixtures/infer/make_fixtures.py --bf16 made
// them for these folders).
class HfInferenceBf16 : public ::testing::TestWithParam<const char*> {};

TEST_P(HfInferenceBf16, LogitsEqualTransformersInBf16) {
    int64_t new_tokens = 0;
    const Reference ref = reference(GetParam(), &new_tokens);
    ASSERT_FALSE(ref.logits_bf16.empty()) << "no logits_bf16 for " << GetParam();
    LoadedModel m = load(GetParam(), DType::bf16);
    EXPECT_EQ(m.model->parameters().front()->value.dtype(), DType::bf16);
    double worst = 0;
    for (size_t p = 0; p < ref.prompts.size(); ++p) {
        const Tensor logits =
            cast_float(m.model->logits(row_tensor(ref.prompts[p]), nullptr, 0), DType::f32);
        const int64_t n = logits.size(1), V = logits.size(2);
        for (int64_t t = 0; t < n; ++t)
            for (int64_t v = 0; v < V; ++v)
                worst = std::max(worst, std::abs(logits.data<float>()[t * V + v] -
                                                 ref.logits_bf16[p][size_t(t)][size_t(v)]));
    }
    EXPECT_LT(worst, 1e-2) << GetParam();
    RecordProperty("largest_difference", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(Folders, HfInferenceBf16,
                         ::testing::Values("qwen2", "qwen3", "qwen3_moe", "gpt_oss", "gemma3"));

TEST(HfInference, PromptPlusGenerationLongerThanThePositionsIsAnError) {
    LoadedModel m = load("gpt2");  // n_positions 16
    GenerationRequest request;
    request.prompts = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}};
    request.tokens_to_generate = 7;
    request.sampling.top_k = 1;
    SamplingRng rng(1);
    const std::string error = mt::test::error_of([&] {
        generate(*m.model, request, GenerationTokens{0, 128, {}, {}, {}}, rng);
    });
    EXPECT_NE(error.find("longer than allowed (10 + 7 > 16)"), std::string::npos) << error;
}

}  // namespace
}  // namespace mt::infer
