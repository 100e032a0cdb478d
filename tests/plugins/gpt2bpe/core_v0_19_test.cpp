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

// --tokenizer-metadata (make_metadata_fixture.py): model_type gpt makes the dataset identity
// GPTTokenizer's; a file of another library is an error, as Megatron's build_tokenizer fails.
TEST(CoreV019Gpt2Bpe, TokenizerMetadataAsMegatron) {
    if (!mt::test::test_data("gpt2/gpt2-vocab.json"))
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping core_v0.19's tokenizer metadata";
    mt::test::CoreV019MetadataReference ref;
    size_t identities = 0, errors = 0;
    for (auto config : ref.root.get_array()) {
        if (std::string_view(config["type"]) != "GPT2BPETokenizer") continue;
        simdjson::dom::element identity;
        if (config["identity"].get(identity) == simdjson::SUCCESS) {
            const TokenizerOptions o = mt::test::core_v0_19_options(config);
            EXPECT_FALSE(o.metadata_chat_template.has_value());
            mt::test::expect_core_v0_19_identity(CoreGpt2BpeTokenizer(o).dataset_identity(),
                                                 identity, o);
            ++identities;
        } else {
            try {
                mt::test::core_v0_19_options(config);
                ADD_FAILURE() << "Megatron fails here: " << std::string_view(config["error"]);
            } catch (const mt::Error& e) {
                EXPECT_NE(std::string(e.what()).find("library 'sentencepiece'"), std::string::npos)
                    << e.what();
            }
            ++errors;
        }
    }
    EXPECT_EQ(identities, 1u);
    EXPECT_EQ(errors, 1u);
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
