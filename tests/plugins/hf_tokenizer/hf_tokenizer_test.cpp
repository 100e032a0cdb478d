// HuggingFaceTokenizer: folder / file arguments, the config's effects, errors for what is not
// supported, thread safety, and loading through the real plugin loader.
#include <gtest/gtest.h>

#include <thread>

#include "fixture_util.h"
#include "hf_tokenizer.h"
#include "mt/plugin_loader.h"
#include "register.h"

namespace mt::plugins::hf_tokenizer {
namespace {

using mt::test::error_of;
using mt::test::TempDir;
using test::make_folder;
using Ids = std::vector<int32_t>;

std::unique_ptr<Tokenizer> open(const std::filesystem::path& path) {
    TokenizerOptions o;
    o.tokenizer_model = path.string();
    return std::make_unique<HfTokenizer>(o);
}

TEST(HfTokenizer, FolderOrFile) {
    TempDir dir;
    const auto folder = make_folder(dir, "llama3ish");
    EXPECT_EQ(open(folder)->encode("Hello world"),
              open(folder / "tokenizer.json")->encode("Hello world"));
    EXPECT_EQ(open(folder)->name(), "HuggingFaceTokenizer");
    // Megatron's dataset cache key: _HuggingFaceTokenizer [--tokenizer-model], no options.
    const TokenizerIdentity id = open(folder)->dataset_identity();
    EXPECT_EQ(id.class_name, "_HuggingFaceTokenizer");
    EXPECT_EQ(id.paths, (std::vector<std::optional<std::string>>{folder.string()}));
    EXPECT_TRUE(id.options.empty());
}

TEST(HfTokenizer, Llama2AddsBosAndByteFallback) {
    TempDir dir;
    auto tok = open(make_folder(dir, "llama2"));
    EXPECT_EQ(tok->encode("Hello world"), (Ids{1, 15043, 3186}));
    EXPECT_EQ(tok->encode(""), (Ids{1}));
    // U+10FFFF is not in the vocab: its four bytes come as <0xF4> <0x8F> <0xBF> <0xBF>.
    EXPECT_EQ(tok->encode("\xF4\x8F\xBF\xBF"),
              (Ids{1, 29871, 3 + 0xF4, 3 + 0x8F, 3 + 0xBF, 3 + 0xBF}));
    EXPECT_EQ(tok->decode(Ids{1, 15043, 3186}), "<s> Hello world");
    EXPECT_EQ(tok->eod(), 2);
}

TEST(HfTokenizer, ConfigAddBosAndEos) {
    TempDir dir;
    auto tok = open(make_folder(dir, "llama2",
                                R"({"tokenizer_class": "TokenizersBackend", "bos_token": "<s>",
                                    "eos_token": "</s>", "add_bos_token": false, "add_eos_token": true})"));
    EXPECT_EQ(tok->encode("Hello world"), (Ids{15043, 3186, 2}));
}

TEST(HfTokenizer, ConfigSpecialTokenMissingFromTheVocabIsAdded) {
    TempDir dir;
    auto tok = open(make_folder(
        dir, "llama2", R"({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"})"));
    EXPECT_EQ(tok->vocab_size(), 32001);
    EXPECT_EQ(tok->encode("a<pad>"), (Ids{1, 263, 32000}));
    EXPECT_EQ(tok->decode(Ids{32000}), "<pad>");
    EXPECT_FALSE(
        tok->special_ids().pad.has_value());  // Megatron's _HuggingFaceTokenizer has no pad
}

TEST(HfTokenizer, NoConfigMeansNoBosOrEod) {
    TempDir dir;
    const auto folder = make_folder(dir, "llama3ish");
    std::filesystem::remove(folder / "tokenizer_config.json");
    auto tok = open(folder);
    EXPECT_FALSE(tok->special_ids().bos.has_value());
    EXPECT_NE(error_of([&] { tok->eod(); }).find("eod"), std::string::npos);
}

TEST(HfTokenizer, SpecialTokensMapFillsWhatTheConfigLacks) {
    TempDir dir;
    const auto folder = make_folder(dir, "llama3ish", R"({"eos_token": "<|eot_id|>"})");
    mt::test::write_file(folder / "special_tokens_map.json",
                         R"({"bos_token": {"content": "<|begin_of_text|>", "special": true},
                             "eos_token": "<|end_of_text|>"})");
    auto tok = open(folder);
    EXPECT_EQ(tok->special_ids().bos, 0);
    EXPECT_EQ(tok->special_ids().eod, 2);  // tokenizer_config.json wins
}

void expect_unsupported(const std::string& from, const std::string& to, const std::string& what) {
    TempDir dir;
    const auto folder = make_folder(dir, "llama3ish");
    std::string json = mt::test::read_file(folder / "tokenizer.json");
    const size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
    mt::test::write_file(folder / "tokenizer.json", json);
    const std::string msg = error_of([&] { open(folder); });
    EXPECT_NE(msg.find("not supported yet: " + what), std::string::npos) << msg;
    EXPECT_NE(msg.find(" in " + (folder / "tokenizer.json").string()), std::string::npos) << msg;
}

TEST(HfTokenizer, UnsupportedComponentsAreErrors) {
    expect_unsupported(R"("normalizer":null)", R"("normalizer":{"type":"BertNormalizer"})",
                       "normalizer BertNormalizer");
    expect_unsupported(R"("type":"BPE")", R"("type":"WordPiece")", "model WordPiece");
    expect_unsupported(R"("dropout":null)", R"("dropout":0.1)", "BPE dropout");
    expect_unsupported(R"("behavior":"Isolated")", R"("behavior":"Sideways")",
                       "pre_tokenizer Split behavior Sideways");
    // \w is Unicode's word class in tiktoken and tokenizers, another in PCRE2.
    expect_unsupported(R"(\\s+(?!\\S)|\\s+")", R"(\\s+(?!\\S)|\\w+")",
                       "pre_tokenizer Split regex '");
    expect_unsupported(R"("decoder":{"type":"ByteLevel")", R"("decoder":{"type":"WordPiece")",
                       "decoder WordPiece");
    expect_unsupported(R"("single_word":false,"lstrip":true)",
                       R"("single_word":true,"lstrip":true)", "added token with single_word");
}

TEST(HfTokenizer, UnsupportedTokenizerClass) {
    TempDir dir;
    const auto folder = make_folder(dir, "llama3ish", R"({"tokenizer_class": "T5Tokenizer"})");
    const std::string msg = error_of([&] { open(folder); });
    EXPECT_NE(msg.find("not supported yet: tokenizer_class T5Tokenizer"), std::string::npos) << msg;
}

TEST(HfTokenizer, MissingFileAndBadText) {
    TempDir dir;
    EXPECT_NE(error_of([&] { open(dir / "nothing"); }).find("no tokenizer.json"),
              std::string::npos);
    auto tok = open(make_folder(dir, "llama3ish"));
    Ids out{7};
    EXPECT_NE(error_of([&] { tok->encode_append("ok \xC3", out); }).find("not valid UTF-8"),
              std::string::npos);
    EXPECT_EQ(out, Ids{7});
    EXPECT_NE(error_of([&] { tok->decode(Ids{999999}); }).find("cannot decode id 999999"),
              std::string::npos);
}

TEST(HfTokenizer, ThreadsAgree) {
    TempDir dir;
    auto tok = open(make_folder(dir, "gpt2"));
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i)
        texts.push_back("line " + std::to_string(i * 7919) +
                        " of some text, repeated words words ");
    std::vector<Ids> expected;
    for (const auto& t : texts) expected.push_back(tok->encode(t));
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int rep = 0; rep < 5; ++rep)
                for (size_t i = 0; i < texts.size(); ++i)
                    bad[k] += tok->encode(texts[i]) != expected[i];
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(bad, std::vector<int>(4, 0));
}

TEST(HfTokenizer, LoadedThroughThePluginLoader) {
    // No register call: the registry finds libmt_tokenizer_hf_tokenizer.so in the build tree.
    TempDir dir;
    Registry registry;
    TokenizerOptions o;
    o.tokenizer_model = make_folder(dir, "llama2").string();
    auto tok = registry.create_tokenizer("HuggingFaceTokenizer", o);
    EXPECT_EQ(tok->encode("Hello world"), (Ids{1, 15043, 3186}));
    bool found = false;
    for (const auto& info : registry.loader().loaded()) found |= info.name == "hf_tokenizer";
    EXPECT_TRUE(found);
}

}  // namespace
}  // namespace mt::plugins::hf_tokenizer
