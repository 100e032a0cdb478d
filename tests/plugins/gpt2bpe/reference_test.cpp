// GPT-2 ids against Megatron's GPT2Tokenizer (through make_fixtures.py): nasty strings, decode
// cases, the GPT-2 example file, and per-document digests of the shared corpora.
#include <gtest/gtest.h>

#include <cstdio>

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

// The documents of one corpus file, split as make_fixtures.py splits them.
std::vector<std::string> documents(const std::filesystem::path& path) {
    std::vector<std::string> docs;
    if (path.extension() == ".jsonl") {
        simdjson::dom::parser parser;
        simdjson::padded_string data = simdjson::padded_string::load(path.string());
        for (simdjson::dom::element doc : parser.parse_many(data))
            docs.push_back(test::string_of(doc["text"]));
        return docs;
    }
    const std::string text = mt::test::read_file(path);
    size_t start = 0;
    while (start < text.size()) {
        const size_t nl = text.find('\n', start);
        const size_t end = nl == std::string::npos ? text.size() : nl + 1;
        docs.push_back(text.substr(start, end - start));
        start = end;
    }
    return docs;
}

TEST(Gpt2BpeReference, CorpusDigests) {
    auto gpt2 = test::gpt2_tokenizer();
    if (!gpt2) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the corpus digests";
    simdjson::dom::parser parser;
    simdjson::dom::element files = parser.load(test::fixture("corpus_digests.json").string());
    for (simdjson::dom::element f : files.get_array()) {
        const std::string rel = test::string_of(f["file"]);
        auto path = mt::test::test_data(rel);
        if (!path) {
            ADD_FAILURE() << "missing test data file " << rel;
            continue;
        }
        const std::vector<std::string> docs = documents(*path);
        ASSERT_EQ(docs.size(), size_t(int64_t(f["docs"]))) << rel;
        simdjson::dom::array hashes = f["fnv1a64"].get_array();
        size_t index = 0, total = 0, mismatches = 0;
        for (simdjson::dom::element h : hashes) {
            const std::vector<int32_t> ids = gpt2->encode(docs[index]);
            total += ids.size();
            char hex[17];
            std::snprintf(hex, sizeof hex, "%016llx",
                          static_cast<unsigned long long>(test::fnv1a64(ids)));
            if (std::string_view(hex) != std::string_view(h)) {
                if (mismatches++ == 0)
                    ADD_FAILURE() << rel << ": document " << index
                                  << " gives other ids than Megatron (" << ids.size()
                                  << " ids; first 80 bytes: " << docs[index].substr(0, 80) << ")";
            }
            ++index;
        }
        EXPECT_EQ(mismatches, 0u) << rel << ": documents that differ";
        EXPECT_EQ(total, size_t(int64_t(f["total_ids"]))) << rel;
    }
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
