// The BertWordPiece tokenizers against Megatron-LM's Python tokenizer on real data: SQuAD
// questions (reference ids shipped with the data), the hard strings of nasty.json, and
// per-document digests of LAMBADA, WikiText-2, OpenWebText and Gutenberg text, all made by
// tests/fixtures/wordpiece/make_fixtures.py. Skips without MEGATRON_TEST_DATA.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "bert_wordpiece_tokenizer.h"
#include "test_support.h"

namespace mt::plugins::wordpiece {
namespace {

using Ids = std::vector<int32_t>;
namespace fs = std::filesystem;

#define SKIP_WITHOUT(var, relative)         \
    auto var = test::test_data((relative)); \
    if (!var) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping (needs " << (relative) << ")"

// One tokenizer per vocabulary for the whole test program.
const BertWordPieceTokenizer& tokenizer(bool lower_case) {
    static std::unique_ptr<BertWordPieceTokenizer> cache[2];
    auto& slot = cache[lower_case ? 1 : 0];
    if (!slot) {
        TokenizerOptions o;
        o.vocab_file = test::test_data(lower_case ? "bert/bert-large-uncased-vocab.txt"
                                                  : "bert/bert-large-cased-vocab.txt")
                           ->string();
        slot = std::make_unique<BertWordPieceTokenizer>(o, lower_case);
    }
    return *slot;
}

Ids ids_of(simdjson::dom::array array) {
    Ids out;
    for (int64_t v : array) out.push_back(static_cast<int32_t>(v));
    return out;
}

std::string escaped(std::string_view text, size_t limit = 120) {
    std::string out;
    for (unsigned char c : text.substr(0, limit)) {
        if (c < 0x20) {
            out += "\\x";
            out += "0123456789abcdef"[c >> 4];
            out += "0123456789abcdef"[c & 15];
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return text.size() > limit ? out + "..." : out;
}

TEST(WordPieceReference, SquadQuestionsUncased) {
    SKIP_WITHOUT(ids_path, "bert/squad1.1-dev-questions.bert-uncased-ids.json");
    SKIP_WITHOUT(tokens_path, "bert/squad1.1-dev-questions.bert-uncased-tokens.json");
    SKIP_WITHOUT(vocab, "bert/bert-large-uncased-vocab.txt");
    simdjson::dom::parser ids_parser, tokens_parser;
    simdjson::dom::array expected = ids_parser.load(ids_path->string()).get_array();
    simdjson::dom::array questions = tokens_parser.load(tokens_path->string()).get_array();
    ASSERT_EQ(expected.size(), 10570u);
    ASSERT_EQ(questions.size(), expected.size());
    const auto& t = tokenizer(true);
    size_t index = 0, mismatches = 0;
    auto want = expected.begin();
    for (simdjson::dom::element q : questions) {
        const std::string_view text = q["original"].get_string();
        const Ids ref = ids_of((*want).get_array());
        const Ids got = t.encode(text);
        if (got != ref && mismatches++ == 0)
            ADD_FAILURE() << "first mismatch: question " << index << " '" << escaped(text)
                          << "': " << got.size() << " ids, expected " << ref.size();
        ++want;
        ++index;
    }
    EXPECT_EQ(mismatches, 0u) << "of " << index << " questions";
}

class NastyStrings : public ::testing::TestWithParam<bool> {};

TEST_P(NastyStrings, IdsDecodeAndSpecialIds) {
    const bool lower_case = GetParam();
    const char* vocab_name =
        lower_case ? "bert/bert-large-uncased-vocab.txt" : "bert/bert-large-cased-vocab.txt";
    SKIP_WITHOUT(vocab, vocab_name);
    const char* key = lower_case ? "uncased" : "cased";
    simdjson::dom::parser parser;
    simdjson::dom::element root =
        parser.load((test::fixtures_dir() / "wordpiece" / "nasty.json").string());
    const auto& t = tokenizer(lower_case);

    simdjson::dom::element v = root["vocabs"][key];
    EXPECT_EQ(t.vocab_size(), int64_t(v["vocab_size"]));
    const SpecialIds& s = t.special_ids();
    EXPECT_EQ(s.cls, int64_t(v["special"]["cls"]));
    EXPECT_EQ(s.sep, int64_t(v["special"]["sep"]));
    EXPECT_EQ(s.pad, int64_t(v["special"]["pad"]));
    EXPECT_EQ(s.mask, int64_t(v["special"]["mask"]));
    EXPECT_EQ(s.bos, int64_t(v["special"]["bos"]));
    EXPECT_EQ(s.eos, int64_t(v["special"]["eos"]));
    EXPECT_EQ(s.eod, int64_t(v["special"]["eod"]));
    {
        TokenizerOptions o;
        o.vocab_file = vocab->string();
        o.vocab_extra_ids = 3;
        BertWordPieceTokenizer extra(o, lower_case);
        simdjson::dom::element e = v["extra_ids_3"];
        EXPECT_EQ(extra.vocab_size(), int64_t(e["vocab_size"]));
        const Ids extra_ids = ids_of(e["ids"].get_array());
        for (size_t i = 0; i < extra_ids.size(); ++i)
            EXPECT_EQ(extra.vocab().id("<extra_id_" + std::to_string(i) + ">"), extra_ids[i]);
        EXPECT_EQ(extra.decode(extra_ids), std::string_view(e["decoded"].get_string()));
    }

    size_t cases = 0;
    for (simdjson::dom::element c : root["cases"].get_array()) {
        const std::string_view name = c["name"].get_string();
        const std::string_view text = c["text"].get_string();
        const Ids expected = ids_of(c[key]["ids"].get_array());
        const Ids got = t.encode(text);
        EXPECT_EQ(got, expected) << name << ": '" << escaped(text) << "'";
        EXPECT_EQ(t.decode(got), std::string_view(c[key]["decoded"].get_string())) << name;
        ++cases;
    }
    EXPECT_GT(cases, 40u);
    for (simdjson::dom::element c : root["decode_cases"][key].get_array())
        EXPECT_EQ(t.decode(ids_of(c["ids"].get_array())), std::string_view(c["text"].get_string()));
}

INSTANTIATE_TEST_SUITE_P(Vocab, NastyStrings, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "uncased" : "cased"; });

// FNV-1a 64 over the ids as little-endian int32 bytes (make_fixtures.py's fnv1a_ids).
uint64_t fnv1a(const Ids& ids) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (int32_t id : ids) {
        const auto u = static_cast<uint32_t>(id);
        for (int b = 0; b < 4; ++b) {
            h ^= (u >> (8 * b)) & 0xFF;
            h *= 0x100000001B3ull;
        }
    }
    return h;
}

struct Corpus {
    const char* name;
    const char* file;
    bool jsonl;  // else one document per line
};
void PrintTo(const Corpus& c, std::ostream* os) {
    *os << c.name;
}

std::vector<std::string> documents(const fs::path& path, bool jsonl) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> docs;
    std::string line;
    simdjson::dom::parser parser;
    while (std::getline(in, line)) {
        if (!jsonl) {
            docs.push_back(line);
            continue;
        }
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        docs.emplace_back(std::string_view(parser.parse(line)["text"].get_string()));
    }
    return docs;
}

class CorpusDigest : public ::testing::TestWithParam<std::tuple<Corpus, bool>> {};

TEST_P(CorpusDigest, MatchesMegatron) {
    const auto& [corpus, lower_case] = GetParam();
    SKIP_WITHOUT(path, corpus.file);
    SKIP_WITHOUT(vocab, lower_case ? "bert/bert-large-uncased-vocab.txt"
                                   : "bert/bert-large-cased-vocab.txt");
    const fs::path digest_path =
        test::fixtures_dir() / "wordpiece" / "digests" /
        (std::string(corpus.name) + (lower_case ? ".uncased.txt" : ".cased.txt"));
    std::ifstream digest(digest_path);
    ASSERT_TRUE(digest) << digest_path;
    std::vector<std::pair<uint64_t, size_t>> expected;
    for (std::string line; std::getline(digest, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        uint64_t hash;
        size_t count;
        fields >> std::hex >> hash >> std::dec >> count;
        expected.emplace_back(hash, count);
    }
    const std::vector<std::string> docs = documents(*path, corpus.jsonl);
    ASSERT_EQ(docs.size(), expected.size()) << "documents in " << *path;
    const auto& t = tokenizer(lower_case);
    Ids ids;
    size_t total = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        ids.clear();
        t.encode_append(docs[i], ids);
        total += ids.size();
        if (fnv1a(ids) != expected[i].first || ids.size() != expected[i].second) {
            FAIL() << corpus.name << (lower_case ? " uncased" : " cased")
                   << ": first differing document is " << i << " (" << ids.size()
                   << " ids, Megatron " << expected[i].second << "): '" << escaped(docs[i]) << "'";
        }
    }
    RecordProperty("ids", std::to_string(total));
}

const Corpus kCorpora[] = {
    {"lambada", "lambada/lambada_test.jsonl", true},
    {"wikitext", "wikitext/wiki.test.tokens", false},
    {"openwebtext", "corpus/openwebtext-1000.jsonl", true},
    {"gutenberg_small", "corpus/gutenberg_small.jsonl", true},
};

INSTANTIATE_TEST_SUITE_P(Corpora, CorpusDigest,
                         ::testing::Combine(::testing::ValuesIn(kCorpora), ::testing::Bool()),
                         [](const auto& info) {
                             return std::string(std::get<0>(info.param).name) +
                                    (std::get<1>(info.param) ? "_uncased" : "_cased");
                         });

}  // namespace
}  // namespace mt::plugins::wordpiece
