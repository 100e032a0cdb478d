// GPT2BPETokenizer as core_v0.19 builds it (transformers' GPT-2 tokenizer behind Megatron's
// MegatronHFTokenizer) against that class's answers: <|endoftext|> and --tokenizer-special-tokens
// found in the text, the tokens it adds, decode with and without special tokens, the corpora.
#include <gtest/gtest.h>

#include "core_gpt2bpe_tokenizer.h"
#include "core_v0_19_tokenizers.h"

namespace mt::plugins::gpt2bpe {
namespace {

TEST(CoreV019Gpt2Bpe, EveryConfigurationAsMegatron) {
    if (!mt::test::test_data("gpt2/gpt2-vocab.json"))
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping core_v0.19's GPT2BPETokenizer ids";
    mt::test::CoreV019Reference ref;
    const size_t n = mt::test::for_each_core_v0_19_config(
        ref, "GPT2BPETokenizer", [](simdjson::dom::element config, const TokenizerOptions& o) {
            CoreGpt2BpeTokenizer tok(o);
            mt::test::expect_core_v0_19_config(tok, config, o);
        });
    EXPECT_EQ(n, 3u);
}

// Legacy core_v0.13 encodes the same text as ordinary characters.
TEST(CoreV019Gpt2Bpe, EndOfTextInTheTextIsTheSpecialToken) {
    auto vocab = mt::test::test_data("gpt2/gpt2-vocab.json");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no GPT-2 vocabulary";
    TokenizerOptions o;
    o.vocab_file = vocab->string();
    o.merge_file = mt::test::test_data("gpt2/gpt2-merges.txt")->string();
    o.classes = TokenizerOptions::Classes::core_v0_19;
    EXPECT_EQ(CoreGpt2BpeTokenizer(o).encode("a<|endoftext|>"), (std::vector<int32_t>{64, 50256}));
    EXPECT_NE(Gpt2BpeTokenizer(o).encode("a<|endoftext|>"), (std::vector<int32_t>{64, 50256}));
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
