// HuggingFaceTokenizer against transformers: every text of cases_<name>.json must give the ids
// AutoTokenizer gave (Megatron's tokenize()) and decode to what tokenizer.decode gave; and the
// Split-regex cases of tests/fixtures/tiktoken (Tekken, with corpus digests; Llama-3, GPT-2).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <optional>
#include <string>
#include <vector>

#include "corpus_reference.h"
#include "fixture_util.h"
#include "hf_tokenizer.h"
#include "register.h"

namespace mt::plugins::hf_tokenizer {
namespace {

using mt::test::read_maybe_zstd;
using test::fixture;
using test::make_folder;
using Ids = std::vector<int32_t>;

Ids ids_of(simdjson::dom::element e) {
    Ids ids;
    for (auto v : e.get_array()) ids.push_back(int32_t(int64_t(v)));
    return ids;
}

std::optional<int32_t> optional_id(simdjson::dom::element e) {
    if (e.is_null()) return std::nullopt;
    return int32_t(int64_t(e));
}

// Runs every case of `ref` (make_fixtures.py's form) against the tokenizer in `folder`.
void check_cases(simdjson::dom::element ref, const std::string& cases,
                 const std::filesystem::path& folder, size_t min_cases = 300) {
    Registry registry;
    register_hf_tokenizer(registry);
    TokenizerOptions options;
    options.tokenizer_model = folder.string();
    auto tok = registry.create_tokenizer("HuggingFaceTokenizer", options);

    EXPECT_EQ(tok->vocab_size(), int64_t(ref["vocab_size"]));
    EXPECT_EQ(tok->special_ids().bos, optional_id(ref["bos"]));
    EXPECT_EQ(tok->special_ids().eod, optional_id(ref["eod"]));
    EXPECT_FALSE(tok->special_ids().pad.has_value());
    EXPECT_FALSE(tok->special_ids().eos.has_value());
    int failures = 0;
    size_t n = 0;
    for (auto c : ref["cases"].get_array()) {
        ++n;
        const std::string_view input = c["text"];
        const Ids expected = ids_of(c["ids"]);
        const Ids got = tok->encode(input);
        EXPECT_EQ(got, expected) << cases << ": text '" << input << "'";
        EXPECT_EQ(tok->decode(expected), std::string_view(c["decoded"]))
            << cases << ": text '" << input << "'";
        if (got != expected && ++failures > 5) break;
    }
    EXPECT_GT(n, min_cases);
    simdjson::dom::array decodes;
    if (!ref["decodes"].get_array().get(decodes)) {
        for (auto c : decodes)
            EXPECT_EQ(tok->decode(ids_of(c["ids"])), std::string_view(c["text"])) << cases;
    }
    simdjson::dom::array corpora;
    if (!ref["corpora"].get_array().get(corpora))
        mt::test::expect_corpus_digests(
            corpora, [&](const std::string& doc) { return tok->encode(doc); },
            "transformers (" + cases + ")");
}

// Runs every case of cases_<cases>.json against the tokenizer in `folder`.
void check_cases(const std::string& cases, const std::filesystem::path& folder) {
    simdjson::dom::parser parser;
    const simdjson::padded_string text(read_maybe_zstd(fixture("cases_" + cases + ".json.zst")));
    check_cases(parser.parse(text), cases, folder);
}

// Rewrites folder/tokenizer.json as the fixture's `patch_key` ({"from", "to"}) says: how
// make_fixtures.py derived the tokenizer that gave cases_<cases>.json from a committed folder.
void apply_fixture_patch(const std::string& cases, const char* patch_key,
                         const std::filesystem::path& folder) {
    simdjson::dom::parser parser;
    const simdjson::padded_string text(read_maybe_zstd(fixture("cases_" + cases + ".json.zst")));
    simdjson::dom::element ref = parser.parse(text);
    std::string json = mt::test::read_file(folder / "tokenizer.json");
    const std::string_view from = ref[patch_key]["from"], to = ref[patch_key]["to"];
    const size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << cases << ": " << patch_key;
    json.replace(at, from.size(), to);
    mt::test::write_file(folder / "tokenizer.json", json);
}

// tests/fixtures/tiktoken/make_fixtures.py's transformers ids: Split regexes through PCRE2.
struct SplitRegexCases {
    simdjson::dom::parser parser;
    simdjson::padded_string text{
        read_maybe_zstd(mt::test::fixtures_dir() / "tiktoken" / "cases_hf.json.zst")};
    simdjson::dom::element root = parser.parse(text);
};

TEST(HfTokenizerReference, Llama2) {
    mt::test::TempDir dir;
    check_cases("llama2", make_folder(dir, "llama2"));
}

TEST(HfTokenizerReference, Llama2NormalizerForm) {
    // Real Llama-2 / Mistral files: Prepend("▁") + Replace(" ", "▁") and no pre-tokenizer.
    mt::test::TempDir dir;
    const auto folder = make_folder(dir, "llama2");
    apply_fixture_patch("llama2_legacy", "legacy_patch", folder);
    check_cases("llama2_legacy", folder);
}

TEST(HfTokenizerReference, UnicodeNormalizers) {
    // NFC, NFD, NFKC and NFKD (through ICU) on the texts and on composed, decomposed and
    // compatibility characters (make_fixtures.py's NORMALIZATION_CASES).
    for (const std::string form : {"nfc", "nfd", "nfkc", "nfkd"}) {
        SCOPED_TRACE(form);
        mt::test::TempDir dir;
        const auto folder = make_folder(dir, "llama3ish");
        apply_fixture_patch("llama3ish_" + form, "normalizer_patch", folder);
        check_cases("llama3ish_" + form, folder);
    }
}

TEST(HfTokenizerReference, Llama2ClassRebuildsThePipeline) {
    // transformers 5's LlamaTokenizer keeps only vocab, merges and post-processor of the file:
    // the normalizer form above then tokenizes as the Metaspace form (make_fixtures.py checks).
    mt::test::TempDir dir;
    const auto folder =
        make_folder(dir, "llama2",
                    R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", )"
                    R"("eos_token": "</s>", "unk_token": "<unk>", "legacy": false, )"
                    R"("add_bos_token": true, "add_eos_token": false})");
    apply_fixture_patch("llama2_legacy", "legacy_patch", folder);
    check_cases("llama2", folder);
}

TEST(HfTokenizerReference, Gpt2) {
    mt::test::TempDir dir;
    check_cases("gpt2", make_folder(dir, "gpt2"));
}

TEST(HfTokenizerReference, Llama3StyleByteLevel) {
    mt::test::TempDir dir;
    check_cases("llama3ish", make_folder(dir, "llama3ish"));
}

TEST(HfTokenizerReference, SplitRegexesOnNewerUnicodeAndCaseFolding) {
    // Characters of Unicode 15 and 16, U+180E, U+017F and U+212A under (?i), long runs: the
    // Llama-3 Split regex and ByteLevel's GPT-2 regex as transformers runs them.
    mt::test::TempDir dir;
    SplitRegexCases ref;
    check_cases(ref.root["llama3ish"], "llama3ish", make_folder(dir, "llama3ish"), 60);
    check_cases(ref.root["gpt2"], "gpt2", make_folder(dir, "gpt2"), 60);
}

TEST(HfTokenizerReference, EverySplitBehaviorInvertedOrNot) {
    // llama3ish's tokenizer.json with its Split's behavior and invert changed, as
    // make_fixtures.py changed it for transformers.
    mt::test::TempDir dir;
    const auto folder = make_folder(dir, "llama3ish");
    const std::string json = mt::test::read_file(folder / "tokenizer.json");
    SplitRegexCases ref;
    auto split = ref.root["llama3ish_split"];
    const std::string_view saved = split["saved"];
    const size_t at = json.find(saved);
    ASSERT_NE(at, std::string::npos);
    size_t variants = 0;
    for (auto variant : split["variants"].get_array()) {
        const std::string_view patch = variant["patch"];
        std::string patched = json;
        mt::test::write_file(folder / "tokenizer.json", patched.replace(at, saved.size(), patch));
        TokenizerOptions options;
        options.tokenizer_model = folder.string();
        HfTokenizer tok(options);
        for (auto c : variant["cases"].get_array())
            EXPECT_EQ(tok.encode(std::string_view(c["text"])), ids_of(c["ids"]))
                << patch << ": text '" << std::string_view(c["text"]) << "'";
        ++variants;
    }
    EXPECT_EQ(variants, 10u);
}

TEST(HfTokenizerReference, TekkenSplitRegex) {
    // Mistral's Tekken tokenizer.json: Split(Regex(Megatron's TikToken v2 pattern)) + ByteLevel.
    auto folder = mt::test::test_data("tokenizers/hf/tekken-240718");
    if (!folder) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the Tekken tokenizer.json";
    SplitRegexCases ref;
    check_cases(ref.root["tekken"], "tekken", *folder, 400);
}

}  // namespace
}  // namespace mt::plugins::hf_tokenizer
