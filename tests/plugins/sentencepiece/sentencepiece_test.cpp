// SentencePieceTokenizer, GPTSentencePieceTokenizer and Llama2Tokenizer against Megatron
// core_v0.13's own classes on the shared SentencePiece models (mistral-v1: Llama-2's layout;
// mistral-v3: control and user-defined pieces): ids, detokenized text, vocabulary size, special
// ids and dataset identity on edge cases and on every document of the shared corpora
// (tests/fixtures/sentencepiece/make_fixtures.py); a missing or broken model is an error
// naming the file.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "corpus_digests.h"
#include "mt/error.h"
#include "sentencepiece_tokenizer.h"
#include "test_support.h"
#include "zstd_file.h"

namespace mt::plugins::sentencepiece {
namespace {

namespace fs = std::filesystem;

std::optional<fs::path> model(const std::string& name) {
    return mt::test::test_data("tokenizers/sentencepiece/" + name + ".model");
}

SentencePieceFlavor flavor_of(const std::string& type) {
    if (type == "GPTSentencePieceTokenizer") return SentencePieceFlavor::gpt;
    if (type == "Llama2Tokenizer") return SentencePieceFlavor::llama2;
    return SentencePieceFlavor::sentencepiece;
}

std::vector<int32_t> ints(simdjson::dom::element list) {
    std::vector<int32_t> out;
    for (simdjson::dom::element v : list.get_array()) out.push_back(int32_t(int64_t(v)));
    return out;
}

std::optional<int32_t> special(simdjson::dom::element specials, const char* name) {
    simdjson::dom::element v = specials[name];
    if (v.is_null()) return std::nullopt;
    return int32_t(int64_t(v));
}

class SentencePieceReference : public ::testing::TestWithParam<const char*> {};

TEST_P(SentencePieceReference, EqualsMegatronsClasses) {
    const std::string name = GetParam();
    const auto path = model(name);
    if (!path) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no SentencePiece models";
    const std::string json = mt::test::read_maybe_zstd(mt::test::fixtures_dir() / "sentencepiece" /
                                                       ("cases_" + name + ".json.zst"));
    simdjson::dom::parser parser;
    const simdjson::dom::element root = parser.parse(json);
    int types = 0;
    for (auto [key_view, value] : root.get_object()) {
        const std::string key(key_view);
        SCOPED_TRACE(name + " " + key);
        const std::string type = key.substr(0, key.find(':'));
        TokenizerOptions options;
        options.tokenizer_model = path->string();
        if (key.find(':') != std::string::npos)
            options.vocab_extra_ids = std::stoll(key.substr(key.find(':') + 1));
        const SentencePieceTokenizer tok(options, flavor_of(type));
        EXPECT_EQ(tok.name(), type);
        EXPECT_EQ(tok.vocab_size(), int64_t(value["vocab_size"]));
        EXPECT_EQ(int64_t(tok.vocabulary().size()), tok.vocab_size());
        const SpecialIds& s = tok.special_ids();
        simdjson::dom::element sp = value["specials"];
        EXPECT_EQ(s.cls, special(sp, "cls"));
        EXPECT_EQ(s.sep, special(sp, "sep"));
        EXPECT_EQ(s.eod, special(sp, "eod"));
        EXPECT_EQ(s.mask, special(sp, "mask"));
        EXPECT_EQ(s.pad, special(sp, "pad"));
        EXPECT_EQ(s.bos, special(sp, "bos"));
        EXPECT_EQ(s.eos, special(sp, "eos"));
        // unique_identifiers: class, [the model path], vocab_extra_ids.
        const TokenizerIdentity id = tok.dataset_identity();
        simdjson::dom::element want = value["identity"];
        EXPECT_EQ(id.class_name, std::string_view(want["class"]));
        ASSERT_EQ(id.paths.size(), 1u);
        EXPECT_EQ(id.paths[0], path->string());
        ASSERT_EQ(id.options.size(), 1u);
        EXPECT_EQ(id.options[0].first, "vocab_extra_ids");
        EXPECT_EQ(id.options[0].second, std::string_view(want["vocab_extra_ids"]));

        int cases = 0;
        for (simdjson::dom::element c : value["cases"].get_array()) {
            const std::string text{std::string_view(c["text"])};
            const std::vector<int32_t> ids = tok.encode(text);
            EXPECT_EQ(ids, ints(c["ids"])) << "text: " << text.substr(0, 80);
            EXPECT_EQ(tok.decode(ints(c["ids"])), std::string_view(c["decoded"]))
                << "text: " << text.substr(0, 80);
            ++cases;
        }
        EXPECT_GT(cases, 100);
        for (simdjson::dom::element corpus : value["corpora"].get_array()) {
            const std::string rel{std::string_view(corpus["file"])};
            const auto file = mt::test::test_data(rel);
            ASSERT_TRUE(file) << rel;
            const std::vector<std::string> docs = mt::test::corpus_documents(*file);
            ASSERT_EQ(docs.size(), size_t(int64_t(corpus["docs"]))) << rel;
            size_t index = 0, total = 0, mismatches = 0;
            for (simdjson::dom::element h : corpus["fnv1a64"].get_array()) {
                const std::vector<int32_t> ids = tok.encode(docs[index]);
                total += ids.size();
                if (mt::test::fnv1a64_hex(ids) != std::string_view(h) && mismatches++ == 0)
                    ADD_FAILURE() << rel << ": document " << index << " gives other ids ("
                                  << docs[index].substr(0, 80) << ")";
                ++index;
            }
            EXPECT_EQ(mismatches, 0u) << rel;
            EXPECT_EQ(total, size_t(int64_t(corpus["total_ids"]))) << rel;
        }
        ++types;
    }
    EXPECT_EQ(types, 4);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReference,
                         ::testing::Values("mistral-v1", "mistral-v3"));

TEST(SentencePieceTokenizer, MissingOrBrokenModelIsAnErrorNamingIt) {
    TokenizerOptions options;
    EXPECT_NE(mt::test::error_of([&] {
                  SentencePieceTokenizer t(options, SentencePieceFlavor::llama2);
              }).find("Llama2Tokenizer needs --tokenizer-model"),
              std::string::npos);
    mt::test::TempDir dir;
    mt::test::write_file(dir / "broken.model", "not a model");
    options.tokenizer_model = (dir / "broken.model").string();
    const std::string error = mt::test::error_of(
        [&] { SentencePieceTokenizer t(options, SentencePieceFlavor::sentencepiece); });
    EXPECT_NE(error.find("SentencePieceTokenizer: cannot load the SentencePiece model"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("broken.model"), std::string::npos) << error;
}

}  // namespace
}  // namespace mt::plugins::sentencepiece
