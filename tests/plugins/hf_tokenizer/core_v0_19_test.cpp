// HuggingFaceTokenizer as core_v0.19 builds it against that class's answers on the shared
// tokenizer folders: --tokenizer-special-tokens added, special ids with sep/eos and cls/bos
// standing in for each other, detokenize, --tokenizer-hf-no-include-special-tokens, the corpora.
#include <gtest/gtest.h>

#include "core_hf_tokenizer.h"
#include "core_v0_19_tokenizers.h"

namespace mt::plugins::hf_tokenizer {
namespace {

TEST(CoreV019HfTokenizer, EveryConfigurationAsMegatron) {
    if (!mt::test::test_data("tokenizers/hf/mistral-v1/tokenizer.json"))
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping core_v0.19's HuggingFaceTokenizer";
    mt::test::CoreV019Reference ref;
    const size_t n = mt::test::for_each_core_v0_19_config(
        ref, "HuggingFaceTokenizer", [](simdjson::dom::element config, const TokenizerOptions& o) {
            CoreHfTokenizer tok(o);
            mt::test::expect_core_v0_19_config(tok, config, o);
        });
    EXPECT_EQ(n, 5u);
}

// --tokenizer-metadata with model_type mamba and a chat template (make_metadata_fixture.py):
// MambaTokenizer's dataset identity, and the file's template over the folder's.
TEST(CoreV019HfTokenizer, TokenizerMetadataAsMegatron) {
    if (!mt::test::test_data("tokenizers/hf/mistral-v1/tokenizer.json"))
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping core_v0.19's tokenizer metadata";
    mt::test::CoreV019MetadataReference ref;
    size_t n = 0;
    for (auto config : ref.root.get_array()) {
        if (std::string_view(config["type"]) != "HuggingFaceTokenizer") continue;
        const TokenizerOptions o = mt::test::core_v0_19_options(config);
        CoreHfTokenizer tok(o);
        mt::test::expect_core_v0_19_identity(tok.dataset_identity(), config["identity"], o);
        ASSERT_TRUE(o.metadata_chat_template.has_value());
        EXPECT_EQ(*o.metadata_chat_template, std::string_view(config["chat_template"]));
        ++n;
    }
    EXPECT_EQ(n, 1u);
}

}  // namespace
}  // namespace mt::plugins::hf_tokenizer
