// GPT-2 ids against Megatron's GPT2Tokenizer (through make_fixtures.py): nasty strings, decode
// cases, the GPT-2 example file, and per-document digests of the shared corpora.
#include <gtest/gtest.h>

#include "corpus_reference.h"
#include "test_util.h"

namespace mt::plugins::gpt2bpe {
namespace {

TEST(Gpt2BpeReference, NastyStrings) {
    auto gpt2 = test::gpt2_tokenizer();
    auto tiny = test::data_tokenizer("megatron_indexed/gpt2-tiny-vocab.json",
                                     "megatron_indexed/gpt2-tiny-merges.txt");
    if (!gpt2 || !tiny) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the reference ids";
    EXPECT_EQ(gpt2->vocab_size(), 50257);
    EXPECT_EQ(gpt2->eod(), 50256);
    EXPECT_EQ(tiny->vocab_size(), 5000);
    simdjson::dom::parser parser;
    simdjson::dom::element cases = parser.load(test::fixture("nasty_strings.json").string());
    size_t index = 0;
    for (simdjson::dom::element c : cases.get_array()) {
        const std::string text = test::string_of(c["text"]);
        const std::vector<int32_t> ids = test::int_list(c["ids"]);
        EXPECT_EQ(gpt2->encode(text), ids) << "case " << index;
        EXPECT_EQ(tiny->encode(text), test::int_list(c["tiny_ids"])) << "case " << index;
        // Byte-level BPE is lossless on valid UTF-8.
        EXPECT_EQ(gpt2->decode(ids), text) << "case " << index;
        ++index;
    }
}

TEST(Gpt2BpeReference, DecodeReplacesInvalidUtf8LikePython) {
    auto gpt2 = test::gpt2_tokenizer();
    if (!gpt2) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the reference ids";
    simdjson::dom::parser parser;
    simdjson::dom::element cases = parser.load(test::fixture("decode_cases.json").string());
    for (simdjson::dom::element c : cases.get_array()) {
        const std::vector<int32_t> ids = test::int_list(c["ids"]);
        EXPECT_EQ(gpt2->decode(ids), test::string_of(c["text"]))
            << "ids[0] " << (ids.empty() ? -1 : ids[0]);
    }
}

TEST(Gpt2BpeReference, Gpt2ExampleFile) {
    auto gpt2 = test::gpt2_tokenizer();
    auto path = mt::test::test_data("gpt2/gpt2-encoded-tokens-example.json");
    if (!gpt2 || !path) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the GPT-2 example";
    simdjson::dom::parser parser;
    simdjson::dom::element example = parser.load(path->string());
    const std::vector<int32_t> ids = test::int_list(example["token_ids"]);
    EXPECT_EQ(ids.size(), 221u);
    EXPECT_EQ(gpt2->encode(test::string_of(example["text"])), ids);
}

TEST(Gpt2BpeReference, CorpusDigests) {
    auto gpt2 = test::gpt2_tokenizer();
    if (!gpt2) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the corpus digests";
    simdjson::dom::parser parser;
    simdjson::dom::element files = parser.load(test::fixture("corpus_digests.json").string());
    mt::test::expect_corpus_digests(
        files.get_array(), [&](const std::string& doc) { return gpt2->encode(doc); },
        "Megatron's GPT2BPETokenizer");
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
