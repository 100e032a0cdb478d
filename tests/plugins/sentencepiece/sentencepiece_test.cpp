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
#include <tuple>
#include <vector>

#include "bpe_encoder.h"
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
        mt::test::expect_corpus_digests(
            value["corpora"].get_array(), [&](const std::string& doc) { return tok.encode(doc); },
            "Megatron's " + type);
        ++types;
    }
    EXPECT_EQ(types, 4);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReference,
                         ::testing::Combine(::testing::Values("mistral-v1", "mistral-v3"),
                                            ::testing::Values(Encoder::fastest, Encoder::library)));

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

}  // namespace
}  // namespace mt::plugins::sentencepiece
