// megatron-generate on checkpoints megatron-core wrote for the model variants whose args were
// once dropped without a word (tests/fixtures/torch_dist/make_variant_fixtures.py): Llama 3.x
// rope scaling, interleaved rotary with position interpolation, q/k layer norms, squared ReLU,
// the erf GeLU, and bf16 weights. Each prompt's log-probabilities (--out-seq-length 0) equal
// megatron-core's.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::printed_logprobs;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

namespace {

const fs::path kVariants = mt::test::fixtures_dir() / "torch_dist" / "variants";

simdjson::dom::element expected(const std::string& variant) {
    static simdjson::dom::parser parser;
    static simdjson::dom::element doc = parser.load((kVariants / "expected.json").string());
    return doc[variant];
}

// megatron-generate's log-probabilities of the variant's prompt, the model built from the
// checkpoint's args alone (plus `flags`); the 64-token prompt fills its positions.
std::vector<double> scored(const std::string& variant, const std::string& flags = "") {
    std::string prompt;
    for (int64_t id : expected(variant)["tokens"].get_array())
        prompt += (prompt.empty() ? "" : " ") + std::to_string(id);
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                         shell_quote(kVariants / variant) +
                         " --tokenizer-type NullTokenizer --vocab-size 127 --out-seq-length 0"
                         " --return-log-probs " +
                         flags + " --prompts '" + prompt + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return printed_logprobs(r.output);
}

// The largest |difference| from megatron-core's log-probabilities.
double worst_difference(const std::string& variant, const std::vector<double>& got) {
    const simdjson::dom::array want = expected(variant)["logprobs"].get_array();
    EXPECT_EQ(got.size(), want.size());
    double worst = 0;
    size_t i = 0;
    for (double lp : want)
        if (i < got.size()) worst = std::max(worst, std::fabs(got[i++] - lp));
    return worst;
}

class MegatronCoreVariant : public ::testing::TestWithParam<std::string> {};

TEST_P(MegatronCoreVariant, GenerateGivesMegatronCoresLogProbs) {
    EXPECT_LT(worst_difference(GetParam(), scored(GetParam())), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, MegatronCoreVariant,
                         ::testing::Values("rope_scaling", "interleaved", "qk_layernorm",
                                           "squared_relu", "erf_gelu", "bf16"),
                         [](const auto& info) { return info.param; });

// The same model without the variant scores differently, so the check above catches a variant
// dropped again (--rope-scaling-factor 1 leaves the frequencies unscaled).
TEST(MegatronCoreVariants, DroppingTheRopeScalingChangesTheLogProbs) {
    EXPECT_GT(worst_difference("rope_scaling", scored("rope_scaling", "--rope-scaling-factor 1")),
              1e-2);
}

}  // namespace
