// TikTokenizer against Megatron's own (tests/fixtures/tiktoken/make_fixtures.py, and
// make_fixtures_core_v0_19.py for core_v0.19's class) on the shared Tekken vocabulary: every
// case of every flag set (ids, detokenize, special ids, dataset identity), the flag sets Megatron
// refuses, and per-document digests of the shared corpora.
#include <gtest/gtest.h>

#include "corpus_reference.h"
#include "fixture_util.h"
#include "mt/error.h"
#include "tiktoken_tokenizer.h"

namespace mt::plugins::tiktoken {
namespace {

using mt::test::error_of;
using test::ids_of;
using Ids = std::vector<int32_t>;

constexpr const char* kVocab = "tokenizers/tiktoken/tekken-240718.tiktoken.json";

struct Reference {
    simdjson::dom::parser parser;
    simdjson::padded_string text;
    simdjson::dom::element root;
    explicit Reference(const char* file = "cases_tiktoken.json.zst")
        : text(mt::test::read_maybe_zstd(test::fixture(file))), root(parser.parse(text)) {}
};

// A fixture's configuration: identity, cases and decodes as Megatron's class gave them.
void expect_config(const TikTokenizer& tok, simdjson::dom::element config,
                   const std::string& name) {
    const TokenizerIdentity id = tok.dataset_identity();
    EXPECT_EQ(id.class_name, std::string_view(config["identity"]["class"])) << name;
    size_t options = 0;
    for (auto field : config["identity"].get_object()) {
        if (field.key == "class" || field.key == "tokenizer_path") continue;
        ASSERT_LT(options, id.options.size()) << name;
        EXPECT_EQ(id.options[options].first, field.key) << name;
        EXPECT_EQ(id.options[options].second, std::string_view(field.value)) << name;
        ++options;
    }
    EXPECT_EQ(options, id.options.size()) << name;
    size_t n = 0, failures = 0;
    for (auto c : config["cases"].get_array()) {
        const std::string_view input = c["text"];
        const Ids expected = ids_of(c["ids"]);
        const Ids got = tok.encode(input);
        EXPECT_EQ(got, expected) << name << ": text '" << input << "'";
        EXPECT_EQ(tok.decode(expected), std::string_view(c["decoded"])) << name;
        if (got != expected && ++failures > 5) break;
        ++n;
    }
    EXPECT_GT(n, 400u) << name;
    for (auto d : config["decodes"].get_array())
        EXPECT_EQ(tok.decode(ids_of(d["ids"])), std::string_view(d["text"])) << name;
}

TEST(TikTokenizerReference, EveryFlagSet) {
    auto vocab = mt::test::test_data(kVocab);
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping Megatron's TikTokenizer ids";
    Reference ref;
    for (auto config : ref.root["configs"].get_array()) {
        const std::string name{std::string_view(config["name"])};
        TikTokenizer tok(test::options_of(config["flags"], vocab->string()));
        EXPECT_EQ(tok.vocab_size(), int64_t(config["vocab_size"])) << name;
        EXPECT_EQ(tok.special_ids().bos, int32_t(int64_t(config["bos"]))) << name;
        EXPECT_EQ(tok.special_ids().eos, int32_t(int64_t(config["eos"]))) << name;
        EXPECT_EQ(tok.eod(), int32_t(int64_t(config["eod"]))) << name;
        EXPECT_FALSE(tok.special_ids().pad) << name;
        expect_config(tok, config, name);
    }
}

// core_v0.19's TikTokenTokenizer (make_fixtures_core_v0_19.py): every special id, the special
// tokens' text encoded as them, its identity, what it refuses, and the corpora.
TEST(TikTokenizerReference, CoreV019EveryFlagSet) {
    auto vocab = mt::test::test_data(kVocab);
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping Megatron's TikTokenizer ids";
    Reference ref("cases_core_v0_19.json.zst");
    size_t configs = 0;
    for (auto config : ref.root["configs"].get_array()) {
        const std::string name{std::string_view(config["name"])};
        TokenizerOptions o = test::options_of(config["flags"], vocab->string());
        o.classes = TokenizerOptions::Classes::core_v0_19;
        TikTokenizer tok(o);
        EXPECT_EQ(tok.vocab_size(), int64_t(config["vocab_size"])) << name;
        const SpecialIds& s = tok.special_ids();
        auto specials = config["specials"];
        for (auto [field, got] : {std::pair{"bos", s.bos},
                                  {"eos", s.eos},
                                  {"eod", s.eod},
                                  {"mask", s.mask},
                                  {"pad", s.pad},
                                  {"cls", s.cls},
                                  {"sep", s.sep}})
            EXPECT_EQ(got, int32_t(int64_t(specials[field]))) << name << " " << field;
        EXPECT_TRUE(tok.dataset_identity().single_path);
        expect_config(tok, config, name);
        if (configs++ == 0)
            mt::test::expect_corpus_digests(
                config["corpora"], [&](const std::string& doc) { return tok.encode(doc); },
                "Megatron core_v0.19's TikTokenizer");
    }
    EXPECT_EQ(configs, 3u);
    size_t refused = 0;
    for (auto r : ref.root["refused"].get_array()) {
        TokenizerOptions o = test::options_of(r["flags"], vocab->string());
        o.classes = TokenizerOptions::Classes::core_v0_19;
        EXPECT_FALSE(error_of([&] { TikTokenizer{o}; }).empty());
        ++refused;
    }
    EXPECT_EQ(refused, 6u);
}

TEST(TikTokenizerReference, RefusesWhatMegatronRefuses) {
    auto vocab = mt::test::test_data(kVocab);
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping Megatron's TikTokenizer ids";
    Reference ref;
    size_t n = 0;
    for (auto r : ref.root["refused"].get_array()) {
        const TokenizerOptions o = test::options_of(r["flags"], vocab->string());
        EXPECT_FALSE(error_of([&] { TikTokenizer{o}; }).empty());
        ++n;
    }
    EXPECT_EQ(n, 7u);
}

TEST(TikTokenizerReference, LoneSurrogatesAreRefused) {
    // Python's str can hold them and tiktoken gives U+FFFD's ids; text here is bytes, and these
    // (CESU-style surrogate encodings) are not UTF-8.
    auto vocab = mt::test::test_data(kVocab);
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping Megatron's TikTokenizer ids";
    Reference ref;
    TikTokenizer tok(test::options_of(ref.root["configs"].at(0)["flags"], vocab->string()));
    for (auto s : ref.root["surrogates"].get_array()) {
        const std::string_view hex = s["text_hex"];
        std::string bytes;
        for (size_t i = 0; i < hex.size(); i += 2)
            bytes += char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
        EXPECT_NE(error_of([&] { tok.encode(bytes); }).find("not valid UTF-8"), std::string::npos);
    }
}

TEST(TikTokenizerReference, CorpusDigests) {
    auto vocab = mt::test::test_data(kVocab);
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the corpus digests";
    Reference ref;
    auto config = ref.root["configs"].at(0);
    TikTokenizer tok(test::options_of(config["flags"], vocab->string()));
    mt::test::expect_corpus_digests(
        config["corpora"], [&](const std::string& doc) { return tok.encode(doc); },
        "Megatron's TikTokenizer");
}

}  // namespace
}  // namespace mt::plugins::tiktoken
