// TikTokenizer on the committed small vocabulary (tests/fixtures/tiktoken/handmade.tiktoken.json,
// ids from Megatron's TikTokenizer), its special ids and dataset identity, the flag and file
// checks Megatron's asserts make, thread safety, and loading through the real plugin loader.
#include <gtest/gtest.h>

#include <thread>

#include "fixture_util.h"
#include "mt/error.h"
#include "mt/plugin_loader.h"
#include "mt/registry.h"
#include "register.h"
#include "tiktoken_tokenizer.h"

namespace mt::plugins::tiktoken {
namespace {

using mt::test::error_of;
using mt::test::TempDir;
using test::fixture;
using test::ids_of;
using Ids = std::vector<int32_t>;

struct Handmade {
    simdjson::dom::parser parser;
    simdjson::padded_string text;
    simdjson::dom::element ref;
    TokenizerOptions options;

    Handmade()
        : text(mt::test::read_maybe_zstd(fixture("handmade_cases.json.zst"))),
          ref(parser.parse(text)),
          options(test::options_of(ref["flags"], fixture("handmade.tiktoken.json").string())) {}
};

TEST(TikTokenizer, HandmadeVocabularyGivesMegatronsIds) {
    Handmade h;
    TikTokenizer tok(h.options);
    size_t n = 0, failures = 0;
    for (auto c : h.ref["cases"].get_array()) {
        const std::string_view text = c["text"];
        const Ids got = tok.encode(text);
        EXPECT_EQ(got, ids_of(c["ids"])) << "text '" << text << "'";
        EXPECT_EQ(tok.decode(got), text);
        if (got != ids_of(c["ids"]) && ++failures > 5) break;
        ++n;
    }
    EXPECT_GT(n, 300u);
}

TEST(TikTokenizer, SpecialTokensComeFirst) {
    Handmade h;
    TikTokenizer tok(h.options);
    EXPECT_EQ(tok.vocab_size(), 3 + 286);
    EXPECT_EQ(tok.special_ids().bos, 1);
    EXPECT_EQ(tok.special_ids().eos, 2);
    EXPECT_EQ(tok.eod(), 2);
    EXPECT_FALSE(tok.special_ids().pad.has_value());
    EXPECT_EQ(tok.encode("a"), (Ids{3 + 'a'}));
    // encode_ordinary: a special token's text is text.
    EXPECT_EQ(tok.encode("<s>"), (Ids{3 + '<', 3 + 's', 3 + '>'}));
    EXPECT_EQ(tok.decode(Ids{0, 1, 2, 3 + 'a'}), "<unk><s></s>a");
    // Bytes that are not UTF-8 on their own decode to U+FFFD, as bytes.decode(errors="replace").
    EXPECT_EQ(tok.decode(Ids{3 + 0xF0, 3 + 0x9F}), "\xEF\xBF\xBD");
    EXPECT_NE(error_of([&] { tok.decode(Ids{3 + 286}); }).find("cannot decode id 289"),
              std::string::npos);
    EXPECT_NE(error_of([&] { tok.decode(Ids{-1}); }).find("cannot decode id -1"),
              std::string::npos);
}

TEST(TikTokenizer, DatasetIdentityIsMegatrons) {
    Handmade h;
    h.options.tiktoken_special_tokens = {"<unk>", "<s>", "</s>", "it's", "a\"b'c", "tab\t\x01é"};
    h.options.tiktoken_num_special_tokens = 8;
    h.options.vocab_size = 8 + 286;
    TikTokenizer tok(h.options);
    const TokenizerIdentity id = tok.dataset_identity();
    EXPECT_EQ(id.class_name, "CustomTikTokenizer");
    EXPECT_EQ(id.paths, (std::vector<std::optional<std::string>>{h.options.tokenizer_model}));
    ASSERT_EQ(id.options.size(), 4u);
    EXPECT_EQ(id.options[0], (std::pair<std::string, std::string>{"pattern", kPatternV2}));
    EXPECT_EQ(id.options[1].second, "294");
    EXPECT_EQ(id.options[2].second, "8");
    // str(list): Python's repr of each item.
    EXPECT_EQ(id.options[3].second, R"(['<unk>', '<s>', '</s>', "it's", 'a"b\'c', 'tab\t\x01é'])");
    EXPECT_EQ(tok.decode(Ids{4, 5, 6, 7}), "a\"b'ctab\t\x01é<SPECIAL_6><SPECIAL_7>");
    h.options.tiktoken_special_tokens.reset();
    h.options.vocab_size.reset();
    h.options.tiktoken_num_special_tokens = 3;
    EXPECT_NE(error_of([&] { TikTokenizer{h.options}; }).find("has 286 tokens, fewer than"),
              std::string::npos);
}

TEST(TikTokenizer, RefusesWhatMegatronRefuses) {
    Handmade h;
    auto refused = [&](TokenizerOptions o, const std::string& what) {
        const std::string msg = error_of([&] { TikTokenizer{o}; });
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
    };
    TokenizerOptions o = h.options;
    o.tiktoken_pattern.clear();
    refused(o, "needs --tiktoken-pattern v1 or v2");
    o.tiktoken_pattern = "v3";
    refused(o, "v1 or v2, not 'v3'");
    o = h.options;
    o.tokenizer_model.clear();
    refused(o, "needs --tokenizer-model");
    o = h.options;
    o.tiktoken_special_tokens = {"<unk>", "<s>"};
    refused(o, "should include ['<unk>', '<s>', '</s>']");
    o.tiktoken_special_tokens = {"<unk>", "<s>", "</s>", "<s>"};
    o.tiktoken_num_special_tokens = 5;
    refused(o, "should be unique");
    o = h.options;
    o.tiktoken_num_special_tokens = 2;
    refused(o, "len(--tiktoken-special-tokens) (3) <= --tiktoken-num-special-tokens (2)");
}

TEST(TikTokenizer, RefusesBadVocabularyFiles) {
    TempDir dir;
    const std::string good = mt::test::read_file(fixture("handmade.tiktoken.json"));
    auto refused = [&](const std::string& name, const std::string& content,
                       const std::string& what) {
        mt::test::write_file(dir / name, content);
        TokenizerOptions o;
        o.tokenizer_model = (dir / name).string();
        o.tiktoken_pattern = "v2";
        o.tiktoken_num_special_tokens = 3;
        o.vocab_size = 3 + 286;
        const std::string msg = error_of([&] { TikTokenizer{o}; });
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
    };
    auto edit = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        const size_t at = s.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return s.replace(at, from.size(), to);
    };
    refused("v.txt", good, "is not a .json file");
    refused("v.json", "{}", "not a JSON list");
    refused("v.json", edit(R"("rank": 5,)", R"("rank": 6,)"), "entry 5 has rank 6");
    refused("v.json", edit(R"(, "token_str": "\u0005")", ""), "entry 5 does not have exactly");
    refused("v.json", edit(R"("token_bytes": "BQ==")", R"("token_bytes": "Bg==")"),
            "rank 5 is not the byte 5");
    refused("v.json", edit(R"("token_bytes": "BQ==")", R"("token_bytes": "B?==")"),
            "entry 5: token_bytes is not base64");
    refused("v.json", edit(R"("token_bytes": "YWJjZA==")", R"("token_bytes": "YmM=")"),
            "repeats the bytes of another");
}

TEST(TikTokenizer, InvalidUtf8IsAnError) {
    Handmade h;
    TikTokenizer tok(h.options);
    Ids out{7};
    EXPECT_NE(error_of([&] {
                  tok.encode_append("ok \xC3", out);
              }).find("TikTokenizer: text is not valid UTF-8 at byte 3 (bytes C3)"),
              std::string::npos);
    EXPECT_EQ(out, Ids{7});
}

TEST(TikTokenizer, ThreadsAgree) {
    Handmade h;
    TikTokenizer tok(h.options);
    std::vector<std::string> texts;
    for (auto c : h.ref["cases"].get_array()) texts.emplace_back(std::string_view(c["text"]));
    std::vector<Ids> expected;
    for (const auto& t : texts) expected.push_back(tok.encode(t));
    std::vector<int> bad(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 3; ++round)
                for (size_t i = 0; i < texts.size(); ++i)
                    bad[t] += tok.encode(texts[(i * 7 + t) % texts.size()]) !=
                              expected[(i * 7 + t) % texts.size()];
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(bad, std::vector<int>(4, 0));
}

TEST(TikTokenizer, LoadedThroughThePluginLoader) {
    // No register call: the registry finds libmt_tokenizer_tiktoken.so in the build tree.
    Handmade h;
    Registry registry;
    auto tok = registry.create_tokenizer("TikTokenizer", h.options);
    EXPECT_EQ(tok->encode("abcd"), (Ids{3 + 257}));
    bool found = false;
    for (const auto& info : registry.loader().loaded()) found |= info.name == "tiktoken";
    EXPECT_TRUE(found);
}

}  // namespace
}  // namespace mt::plugins::tiktoken
