// Megatron's sampling rules: greedy takes the first maximum; top-k keeps ties with the k-th
// logit; top-p keeps the token that crosses the threshold (and always the best); temperature
// reshapes the distribution; samples are clamped below the true vocabulary; the parameters
// Megatron asserts on are errors; a seed replays the same draws.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "mt/infer/sampler.h"
#include "test_support.h"

namespace mt::infer {
namespace {

// How often each id comes out of n draws.
std::map<int64_t, int> counts(const std::vector<float>& logits, const SamplingParams& p, int n,
                              int64_t vocab = 1000) {
    SamplingRng rng(7);
    std::map<int64_t, int> c;
    for (int i = 0; i < n; ++i) ++c[sample_token(logits, p, vocab, rng)];
    return c;
}

TEST(Sampler, GreedyTakesTheFirstMaximumAndIgnoresTemperature) {
    SamplingRng rng(1);
    SamplingParams p{1, 0.0, 0.01};
    EXPECT_EQ(sample_token(std::vector<float>{0.5f, 2.0f, 2.0f, -1.0f}, p, 4, rng), 1);
}

TEST(Sampler, TopKKeepsTheKLargestAndTheirTies) {
    // Logits 3, 2, 2, 1, 0: top-2 keeps ids 0, 1 and 2 (tied with the second).
    const std::vector<float> logits = {3, 2, 2, 1, 0};
    auto c = counts(logits, SamplingParams{2, 0.0, 1.0}, 4000);
    std::set<int64_t> seen;
    for (auto& [id, n] : c) seen.insert(id);
    EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2}));
}

TEST(Sampler, TopPKeepsTheTokenThatCrossesTheThreshold) {
    // Probabilities 0.5, 0.3, 0.15, 0.05: with top_p 0.6 the mass before id 1 is 0.5 <= 0.6,
    // so id 1 (which crosses 0.6) stays; before id 2 it is 0.8 > 0.6: dropped.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                       std::log(0.05f)};
    auto c = counts(logits, SamplingParams{0, 0.6, 1.0}, 4000);
    EXPECT_EQ(c.size(), 2u);
    EXPECT_GT(c[0], 0);
    EXPECT_GT(c[1], 0);
    // Renormalised 0.5 : 0.3 -> id 0 with probability 0.625.
    EXPECT_NEAR(c[0] / 4000.0, 0.625, 0.03);
    // A threshold below the best token's mass still keeps the best token.
    auto best = counts(logits, SamplingParams{0, 0.1, 1.0}, 200);
    EXPECT_EQ(best.size(), 1u);  // id 1 has 0.5 > 0.1 before it: dropped
}

TEST(Sampler, PlainSamplingFollowsTheTemperedSoftmax) {
    const std::vector<float> logits = {0.0f, std::log(3.0f)};  // p = 0.25, 0.75
    auto c = counts(logits, SamplingParams{0, 0.0, 1.0}, 8000);
    EXPECT_NEAR(c[1] / 8000.0, 0.75, 0.02);
    // Temperature 2 halves the logits: p1 = sqrt(3) / (1 + sqrt(3)) = 0.634.
    auto hot = counts(logits, SamplingParams{0, 0.0, 2.0}, 8000);
    EXPECT_NEAR(hot[1] / 8000.0, std::sqrt(3.0) / (1 + std::sqrt(3.0)), 0.02);
}

TEST(Sampler, SamplesAreClampedBelowTheVocabularySize) {
    SamplingRng rng(1);
    // The padded vocabulary's last id has the largest logit; the true vocabulary has 3 ids.
    EXPECT_EQ(sample_token(std::vector<float>{0, 0, 0, 9}, SamplingParams{1, 0, 1}, 3, rng), 2);
}

TEST(Sampler, TheSameSeedReplaysTheSameDraws) {
    const std::vector<float> logits(50, 0.0f);
    SamplingRng a(42), b(42), c(43);
    std::vector<int64_t> da, db, dc;
    for (int i = 0; i < 20; ++i) {
        da.push_back(sample_token(logits, {}, 50, a));
        db.push_back(sample_token(logits, {}, 50, b));
        dc.push_back(sample_token(logits, {}, 50, c));
    }
    EXPECT_EQ(da, db);
    EXPECT_NE(da, dc);
}

TEST(Sampler, MegatronsAssertionsAreErrors) {
    EXPECT_NE(mt::test::error_of([] { check_sampling({5, 0.5, 1.0}, 100); })
                  .find("cannot set both top-k and top-p samplings."),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] { check_sampling({0, 1.5, 1.0}, 100); }).find("top_p"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] { check_sampling({0, 0.0, 0.0}, 100); }).find("temperature"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] { check_sampling({100, 0.0, 1.0}, 100); })
                  .find("top-k is larger than vocab size."),
              std::string::npos);
    EXPECT_NO_THROW(check_sampling({1, 0.0, 1.0}, 100));
}

}  // namespace
}  // namespace mt::infer
