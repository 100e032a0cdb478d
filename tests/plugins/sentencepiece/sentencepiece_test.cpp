// SentencePieceTokenizer, GPTSentencePieceTokenizer and Llama2Tokenizer against Megatron
// core_v0.13's own classes on the shared SentencePiece models (mistral-v1: Llama-2's layout;
// mistral-v3: control and user-defined pieces): ids, detokenized text, vocabulary size, special
// ids and dataset identity on edge cases and on every document of the shared corpora
// (tests/fixtures/sentencepiece/make_fixtures.py), and core_v0.19's classes likewise
// (make_fixtures_core_v0_19.py); a missing or broken model is an error naming the file.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bpe_encoder.h"
#include "core_sentencepiece_tokenizer.h"
#include "corpus_reference.h"
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

using Encoder = SentencePieceTokenizer::Encoder;

// A fixture entry's vocabulary size, special ids, cases (ids and decoded text) and corpus
// digests, as Megatron's class `who` gave them.
void expect_megatrons_answers(const Tokenizer& tok, simdjson::dom::element value,
                              const std::string& who) {
    EXPECT_EQ(tok.vocab_size(), int64_t(value["vocab_size"]));
    EXPECT_EQ(int64_t(tok.vocabulary().size()), tok.vocab_size());
    const SpecialIds& s = tok.special_ids();
    simdjson::dom::element sp = value["specials"];
    for (auto [field, got] : {std::pair{"cls", s.cls},
                              {"sep", s.sep},
                              {"eod", s.eod},
                              {"mask", s.mask},
                              {"pad", s.pad},
                              {"bos", s.bos},
                              {"eos", s.eos}})
        EXPECT_EQ(got, special(sp, field)) << field;
    int cases = 0;
    for (simdjson::dom::element c : value["cases"].get_array()) {
        const std::string text{std::string_view(c["text"])};
        EXPECT_EQ(tok.encode(text), ints(c["ids"])) << "text: " << text.substr(0, 80);
        EXPECT_EQ(tok.decode(ints(c["ids"])), std::string_view(c["decoded"]))
            << "text: " << text.substr(0, 80);
        ++cases;
    }
    EXPECT_GT(cases, 100);
    mt::test::expect_corpus_digests(
        value["corpora"].get_array(), [&](const std::string& doc) { return tok.encode(doc); }, who);
}

class SentencePieceReference : public ::testing::TestWithParam<std::tuple<const char*, Encoder>> {};

TEST_P(SentencePieceReference, EqualsMegatronsClasses) {
    const std::string name = std::get<0>(GetParam());
    const Encoder encoder = std::get<1>(GetParam());
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
        const SentencePieceTokenizer tok(options, flavor_of(type), encoder);
        // Both models are Llama-2's layout, which our BPE encoder encodes.
        EXPECT_EQ(tok.own_encoder(), encoder == Encoder::fastest) << tok.why_library();
        EXPECT_EQ(tok.name(), type);
        // unique_identifiers: class, [the model path], vocab_extra_ids.
        const TokenizerIdentity id = tok.dataset_identity();
        simdjson::dom::element want = value["identity"];
        EXPECT_EQ(id.class_name, std::string_view(want["class"]));
        ASSERT_EQ(id.paths.size(), 1u);
        EXPECT_EQ(id.paths[0], path->string());
        ASSERT_EQ(id.options.size(), 1u);
        EXPECT_EQ(id.options[0].first, "vocab_extra_ids");
        EXPECT_EQ(id.options[0].second, std::string_view(want["vocab_extra_ids"]));
        expect_megatrons_answers(tok, value, "Megatron's " + type);
        ++types;
    }
    EXPECT_EQ(types, 4);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReference,
                         ::testing::Combine(::testing::Values("mistral-v1", "mistral-v3"),
                                            ::testing::Values(Encoder::fastest, Encoder::library)));

// core_v0.19's classes (megatron/core/tokenizers; make_fixtures_core_v0_19.py): every type
// plain pieces with eod = eos, and with --tokenizer-sentencepiece-legacy the special tokens
// found in the text, no special ids, and the stripped decode.
class CoreSentencePieceReference
    : public ::testing::TestWithParam<std::tuple<const char*, Encoder>> {};

TEST_P(CoreSentencePieceReference, EqualsMegatronsClasses) {
    const std::string name = std::get<0>(GetParam());
    const Encoder encoder = std::get<1>(GetParam());
    const auto path = model(name);
    if (!path) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no SentencePiece models";
    const std::string json = mt::test::read_maybe_zstd(mt::test::fixtures_dir() / "sentencepiece" /
                                                       ("cases_core_v0_19_" + name + ".json.zst"));
    simdjson::dom::parser parser;
    const simdjson::dom::element root = parser.parse(json);
    int configs = 0;
    for (auto [key, value] : root.get_object()) {
        SCOPED_TRACE(name + " " + std::string(key));
        const std::string type{std::string_view(value["type"])};
        TokenizerOptions options;
        options.tokenizer_model = path->string();
        options.classes = TokenizerOptions::Classes::core_v0_19;
        options.sentencepiece_legacy = bool(value["legacy"]);
        options.sentencepiece_ignore_extra_whitespaces = bool(value["ignore_extra_whitespaces"]);
        if (!value["special_tokens"].is_null()) {
            options.special_tokens.emplace();
            for (simdjson::dom::element t : value["special_tokens"].get_array())
                options.special_tokens->emplace_back(std::string_view(t));
        }
        ASSERT_FALSE(bool(value["removed_extra_spaces"]));
        const CoreSentencePieceTokenizer tok(options, flavor_of(type), encoder);
        EXPECT_EQ(tok.own_encoder(), encoder == Encoder::fastest);
        EXPECT_EQ(tok.name(), type);
        // unique_identifiers: class, the model path (a string), then the wrapper's options.
        const TokenizerIdentity id = tok.dataset_identity();
        simdjson::dom::element want = value["identity"];
        EXPECT_EQ(id.class_name, std::string_view(want["class"]));
        EXPECT_TRUE(id.single_path);
        ASSERT_EQ(id.paths.size(), 1u);
        EXPECT_EQ(id.paths[0], path->string());
        // In build_tokenizer's kwargs order (the fixture's JSON sorts its keys).
        std::vector<std::string> order;
        for (const auto& [option, text] : id.options) {
            EXPECT_EQ(text, std::string_view(want[option])) << option;
            order.push_back(option);
        }
        EXPECT_EQ(order, (std::vector<std::string>{"chat_template", "ignore_extra_whitespaces",
                                                   "legacy", "special_tokens"}));
        expect_megatrons_answers(tok, value, "Megatron core_v0.19's " + type);
        ++configs;
    }
    EXPECT_EQ(configs, 6);
}

INSTANTIATE_TEST_SUITE_P(Models, CoreSentencePieceReference,
                         ::testing::Combine(::testing::Values("mistral-v1", "mistral-v3"),
                                            ::testing::Values(Encoder::fastest, Encoder::library)));

TEST(CoreSentencePiece, RefusesWhatMegatronRefuses) {
    const auto path = model("mistral-v1");
    if (!path) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no SentencePiece models";
    TokenizerOptions o;
    o.tokenizer_model = path->string();
    o.classes = TokenizerOptions::Classes::core_v0_19;
    o.special_tokens = std::vector<std::string>{"<X>"};
    EXPECT_NE(mt::test::error_of([&] {
                  CoreSentencePieceTokenizer{o, SentencePieceFlavor::llama2};
              }).find("only with --tokenizer-sentencepiece-legacy"),
              std::string::npos);
    o.sentencepiece_legacy = true;
    o.special_tokens = std::vector<std::string>{"<X>", ""};
    EXPECT_NE(mt::test::error_of([&] {
                  CoreSentencePieceTokenizer{o, SentencePieceFlavor::gpt};
              }).find("an empty special token"),
              std::string::npos);
}

// Our BPE encoder takes only the models it encodes exactly; the library encodes the rest.
TEST(SentencePieceBpeEncoder, LeavesOtherModelsToTheLibrary) {
    SentencePieceModel m;
    m.model_type = 2;
    m.remove_extra_whitespaces = false;
    m.pieces = {{"<unk>", 0, SentencePieceModel::kUnknown},
                {"a", -1, SentencePieceModel::kNormal},
                {"b", -2, SentencePieceModel::kNormal},
                {"ab", -3, SentencePieceModel::kNormal}};
    std::string why;
    EXPECT_TRUE(BpeEncoder::build(m, &why)) << why;
    auto refused = [&](SentencePieceModel changed, const std::string& reason) {
        std::string w;
        EXPECT_FALSE(BpeEncoder::build(changed, &w)) << reason;
        EXPECT_EQ(w, reason);
    };
    SentencePieceModel unigram = m;
    unigram.model_type = 1;
    refused(unigram, "not a BPE model");
    SentencePieceModel rules = m;
    rules.precompiled_charsmap = true;
    refused(rules, "a normalizer with rules");
    SentencePieceModel squeeze = m;
    squeeze.remove_extra_whitespaces = true;
    refused(squeeze, "a normalizer that removes whitespace");
    SentencePieceModel unused = m;
    unused.pieces.push_back({"c", -4, SentencePieceModel::kUnused});
    refused(unused, "unused pieces");
    SentencePieceModel orphan = m;
    orphan.pieces.push_back({"xy", -5, SentencePieceModel::kNormal});  // x, y are no pieces
    refused(orphan, "a piece whose characters are not pieces");
    // And it encodes the merge: a b -> ab, with the dummy prefix's U+2581 unknown here (<unk>).
    std::vector<int32_t> ids;
    BpeEncoder::build(m, &why)->encode("ab", ids);
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 3}));
}

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

// A piece holding a NUL byte (the tiny model's "</s>" made "<\0s>"): libsentencepiece's trie of
// a unigram model throws where nothing catches it (found by fuzz_sentencepiece,
// tests/fuzz/regressions/sentencepiece), so the model is refused before it sees it.
TEST(SentencePieceTokenizer, PieceWithANulByteIsRefused) {
    std::string bytes =
        mt::test::read_maybe_zstd(mt::test::fixtures_dir() / "sentencepiece" / "tiny_bpe.model");
    const size_t at = bytes.find("</s>");
    ASSERT_NE(at, std::string::npos);
    bytes[at + 1] = '\0';
    mt::test::TempDir dir;
    mt::test::write_file(dir / "nul.model", bytes);
    TokenizerOptions options;
    options.tokenizer_model = (dir / "nul.model").string();
    const std::string error = mt::test::error_of(
        [&] { SentencePieceTokenizer t(options, SentencePieceFlavor::sentencepiece); });
    EXPECT_NE(error.find("cannot load the SentencePiece model"), std::string::npos) << error;
    EXPECT_NE(error.find("holds a NUL byte"), std::string::npos) << error;
}

}  // namespace
}  // namespace mt::plugins::sentencepiece
