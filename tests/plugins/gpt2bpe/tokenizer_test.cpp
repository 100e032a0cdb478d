// GPT2BPETokenizer as a whole: the hand-made vocab/merges pair (Megatron's ids from
// make_fixtures.py), registration, special ids, errors, and encoding on several threads.
#include "gpt2bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "mt/error.h"
#include "mt/registry.h"
#include "register.h"
#include "test_util.h"

namespace mt::plugins::gpt2bpe {
namespace {

std::unique_ptr<Gpt2BpeTokenizer> handmade() {
    TokenizerOptions o;
    o.vocab_file = test::fixture("handmade-vocab.json").string();
    o.merge_file = test::fixture("handmade-merges.txt").string();
    return std::make_unique<Gpt2BpeTokenizer>(o);
}

TEST(Gpt2BpeTokenizer, HandmadeFilesGiveMegatronsIds) {
    auto tok = handmade();
    simdjson::dom::parser parser;
    simdjson::dom::element ref = parser.load(test::fixture("handmade_cases.json").string());
    EXPECT_EQ(tok->vocab_size(), int64_t(ref["vocab_size"]));
    EXPECT_EQ(tok->eod(), int64_t(ref["eod"]));
    for (simdjson::dom::element c : ref["encode"].get_array()) {
        const std::string text = test::string_of(c["text"]);
        EXPECT_EQ(tok->encode(text), test::int_list(c["ids"])) << text;
    }
    for (simdjson::dom::element c : ref["decode"].get_array())
        EXPECT_EQ(tok->decode(test::int_list(c["ids"])), test::string_of(c["text"]));
}

TEST(Gpt2BpeTokenizer, DecodeRejectsIdsMegatronCannotDecode) {
    auto tok = handmade();
    // 14 lost its token to a later repeat of the key "x"; 20 is a gap; 0 is not in the vocab;
    // 21 is "hello world", whose space is not one of the 256 byte characters.
    for (int32_t id : {14, 20, 0, -1, 25, 1 << 30}) {
        const std::vector<int32_t> ids = {2, id};
        EXPECT_THROW(tok->decode(ids), mt::Error) << id;
    }
    const std::vector<int32_t> not_bytes = {21};
    try {
        tok->decode(not_bytes);
        ADD_FAILURE();
    } catch (const mt::Error& e) {
        EXPECT_NE(
            std::string(e.what()).find("id 21: its token is not made of byte-level characters"),
            std::string::npos);
    }
}

TEST(Gpt2BpeTokenizer, RegistersUnderMegatronsName) {
    Registry registry;
    register_gpt2bpe(registry);
    TokenizerOptions o;
    o.vocab_file = test::fixture("handmade-vocab.json").string();
    o.merge_file = test::fixture("handmade-merges.txt").string();
    auto tok = registry.create_tokenizer("GPT2BPETokenizer", o);
    EXPECT_EQ(tok->name(), "GPT2BPETokenizer");
    const SpecialIds& s = tok->special_ids();
    EXPECT_EQ(s.eod, std::optional<int32_t>(13));
    EXPECT_FALSE(s.cls || s.sep || s.mask || s.pad || s.bos || s.eos);
}

TEST(Gpt2BpeTokenizer, MissingFilesAndEodAreErrors) {
    TokenizerOptions o;
    o.vocab_file = test::fixture("handmade-vocab.json").string();
    EXPECT_THROW(Gpt2BpeTokenizer{o}, mt::Error);  // no --merge-file
    std::vector<VocabEntry> vocab = {{"a", 0}};
    try {
        Gpt2BpeTokenizer tok(vocab, {}, "v.json");
        ADD_FAILURE();
    } catch (const mt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("v.json: the vocab has no '<|endoftext|>' token"),
                  std::string::npos);
    }
    vocab = {{"<|endoftext|>", 0}, {"a", 100000}};
    EXPECT_THROW(Gpt2BpeTokenizer(vocab, {}, "v.json"), mt::Error);  // ids far too sparse
}

TEST(Gpt2BpeTokenizer, EncodeAppendsAndLeavesOutputAloneOnInvalidUtf8) {
    auto tok = handmade();
    std::vector<int32_t> out = {42};
    tok->encode_append("ab", out);
    EXPECT_EQ(out, (std::vector<int32_t>{42, 8}));
    EXPECT_THROW(tok->encode_append("abab ab \xff", out), mt::Error);
    EXPECT_EQ(out, (std::vector<int32_t>{42, 8}));
}

// Many distinct words overflow the per-thread cache; results must not change when it resets.
TEST(Gpt2BpeTokenizer, CacheResetKeepsResults) {
    auto tok = test::gpt2_tokenizer();
    if (!tok) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the GPT-2 vocab test";
    std::mt19937 rng(5);
    std::vector<std::string> words;
    for (int i = 0; i < 150000; ++i) {
        std::string w = " ";
        for (int k = 0, n = 3 + int(rng() % 8); k < n; ++k) w += char('a' + rng() % 26);
        words.push_back(w);
    }
    std::vector<std::vector<int32_t>> first;
    for (const auto& w : words) first.push_back(tok->encode(w));
    auto fresh = test::gpt2_tokenizer();  // its own, empty cache
    for (size_t i = 0; i < words.size(); i += 7)
        ASSERT_EQ(fresh->encode(words[i]), first[i]) << words[i];
    for (size_t i = 0; i < words.size(); i += 5)
        ASSERT_EQ(tok->encode(words[i]), first[i]) << words[i];
}

TEST(Gpt2BpeTokenizer, ThreadsGiveTheSameIdsAsOneThread) {
    auto tok = test::gpt2_tokenizer();
    auto docs_path = mt::test::test_data("lambada/lambada_test.jsonl");
    if (!tok || !docs_path)
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the threaded test";
    std::vector<std::string> docs;
    simdjson::dom::parser parser;
    simdjson::padded_string data = simdjson::padded_string::load(docs_path->string());
    for (simdjson::dom::element doc : parser.parse_many(data))
        docs.push_back(test::string_of(doc["text"]));
    ASSERT_EQ(docs.size(), 5153u);

    std::vector<std::vector<int32_t>> single(docs.size());
    {
        auto other = test::gpt2_tokenizer();
        for (size_t i = 0; i < docs.size(); ++i) single[i] = other->encode(docs[i]);
    }
    std::vector<std::vector<int32_t>> multi(docs.size());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            // Each thread walks all documents in its own order; results go to disjoint slots.
            for (size_t k = 0; k < docs.size(); ++k) {
                const size_t i = (k * 4 + size_t(t)) % docs.size();
                std::vector<int32_t> ids = tok->encode(docs[i]);
                if (i % 4 == size_t(t)) multi[i] = std::move(ids);
            }
        });
    }
    for (auto& th : threads) th.join();
    for (size_t i = 0; i < docs.size(); ++i) ASSERT_EQ(multi[i], single[i]) << "document " << i;
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
