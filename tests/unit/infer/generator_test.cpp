// Megatron's generation loop on a scripted model whose next token is always (last + 1) mod V:
// rows keep their prompt until they start sampling, every row runs to the longest prompt +
// tokens_to_generate, EOD ends a row (its length includes the EOD) and all-done ends the batch,
// stop_on_eol / stop_on_double_eol, the colon rule, score-only requests, and the KV cache
// sees each position once.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mt/infer/generator.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/parameter.h"
#include "test_support.h"

namespace mt::infer {
namespace {

constexpr int64_t kVocab = 12;

class NextTokenModel final : public Model {
  public:
    std::vector<nn::Parameter*> parameters() override { return {}; }
    void initialize(uint64_t) override {}
    Losses forward(const Batch&, nn::DropoutContext&, std::unique_ptr<Activations>*) override {
        return {};
    }
    void backward(const std::vector<Tensor>&, const Activations&) override {}
    double training_flops(int64_t) const override { return 0; }
    int64_t max_positions() const override { return 64; }
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override {
        return std::make_unique<nn::InferenceState>(batch, capacity,
                                                    std::vector<nn::InferenceState::LayerStates>{});
    }
    // Position t's logits: 4 for (token + 1) mod V, 2 for (token + 2) mod V, 0 elsewhere.
    Tensor logits(const Tensor& tokens, nn::InferenceState* cache, int64_t keep_last) override {
        const int64_t B = tokens.size(0), T = tokens.size(1);
        const int64_t n = keep_last == 0 ? T : keep_last;
        if (cache) {
            positions_read += T;
            cache->advance(T);
        }
        Tensor out = Tensor::zeros({B, n, kVocab}, DType::f32);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t j = 0; j < n; ++j) {
                const int64_t token = tokens.data<int64_t>()[b * T + T - n + j];
                out.data<float>()[(b * n + j) * kVocab + (token + 1) % kVocab] = 4;
                out.data<float>()[(b * n + j) * kVocab + (token + 2) % kVocab] = 2;
            }
        return out;
    }
    int64_t positions_read = 0;
};

GenerationResult run(NextTokenModel& model, GenerationRequest r, GenerationTokens ids = {}) {
    if (ids.vocab_size == 0) ids = GenerationTokens{11, kVocab, {}, {}, {}};
    r.sampling.top_k = 1;
    SamplingRng rng(3);
    return generate(model, r, ids, rng);
}

using Rows = std::vector<std::vector<int32_t>>;

TEST(Generator, RowsKeepTheirPromptsAndRunToTheLongestPromptPlusTheNewTokens) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{0, 5, 9}, {3}};
    r.tokens_to_generate = 2;
    GenerationResult out = run(model, r);
    // Row 0 samples EOD (11) last: its length includes it.
    EXPECT_EQ(out.tokens, (Rows{{0, 5, 9, 10, 11}, {3, 4, 5, 6, 7}}));
    EXPECT_EQ(model.positions_read, 4);  // prefill 1, then positions 1, 2, 3 once each
}

TEST(Generator, EodEndsARowAndAllRowsDoneEndTheBatch) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{7}, {9}};
    r.tokens_to_generate = 10;
    GenerationResult out = run(model, r);  // EOD 11
    EXPECT_EQ(out.tokens, (Rows{{7, 8, 9, 10, 11}, {9, 10, 11}}));
    EXPECT_EQ(model.positions_read, 4);  // stopped once both rows were done
}

TEST(Generator, StopOnEolAndDoubleEol) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{2}};
    r.tokens_to_generate = 8;
    r.stop_on_eol = true;
    GenerationTokens ids{11, kVocab, 5, 9, {}};
    EXPECT_EQ(run(model, r, ids).tokens, (Rows{{2, 3, 4, 5}}));
    r.stop_on_eol = false;
    r.stop_on_double_eol = true;  // a single newline (5) does not stop; the double one (9) does
    EXPECT_EQ(run(model, r, ids).tokens, (Rows{{2, 3, 4, 5, 6, 7, 8, 9}}));
}

TEST(Generator, NoNewlineAfterAColonWhenAsked) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{3}};
    r.tokens_to_generate = 1;
    r.prevent_newline_after_colon = true;
    GenerationTokens ids{11, kVocab, 4, {}, 3};  // colon 3, newline 4: the runner-up 5 wins
    EXPECT_EQ(run(model, r, ids).tokens, (Rows{{3, 5}}));
}

TEST(Generator, LogProbsOfEveryTokenAfterTheFirst) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{1, 2, 6}};
    r.tokens_to_generate = 1;
    r.return_log_probs = true;
    GenerationResult out = run(model, r);
    ASSERT_EQ(out.tokens, (Rows{{1, 2, 6, 7}}));
    const double z = std::log(std::exp(4.0) + std::exp(2.0) + double(kVocab - 2));
    const std::vector<double> want = {4 - z, 0 - z, 4 - z};  // 2 | 1: best; 6 | 2: other; 7 | 6
    ASSERT_EQ(out.log_probs[0].size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(out.log_probs[0][i], want[i], 1e-6);
}

TEST(Generator, ScoreOnlyNeedsLogProbs) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{1, 2, 3}, {4}};
    r.tokens_to_generate = 0;
    EXPECT_NE(mt::test::error_of([&] {
                  run(model, r);
              }).find("tokens_to_generate=0 implies logprobs should be True"),
              std::string::npos);
    r.return_log_probs = true;
    GenerationResult out = run(model, r);
    EXPECT_EQ(out.tokens, (Rows{{1, 2, 3}, {4}}));
    EXPECT_EQ(out.log_probs[0].size(), 2u);
    EXPECT_EQ(out.log_probs[1].size(), 0u);
}

TEST(Generator, EmptyPromptsAndOverlongRequestsAreErrors) {
    NextTokenModel model;
    GenerationRequest r;
    r.prompts = {{1}, {}};
    EXPECT_NE(mt::test::error_of([&] { run(model, r); }).find("prompt 1 has no tokens"),
              std::string::npos);
    r.prompts = {{1}};
    r.tokens_to_generate = 64;
    EXPECT_NE(mt::test::error_of([&] { run(model, r); }).find("longer than allowed (1 + 64 > 64)"),
              std::string::npos);
    // Near INT64_MAX: an error before anything is allocated, not a wrapped length.
    r.tokens_to_generate = std::numeric_limits<int64_t>::max();
    EXPECT_NE(mt::test::error_of([&] {
                  run(model, r);
              }).find("longer than allowed (1 + 9223372036854775807 > 64)"),
              std::string::npos);
}

}  // namespace
}  // namespace mt::infer
