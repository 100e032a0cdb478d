// The pieces of the HuggingFaceTokenizer pipeline on their own, with expectations taken from
// the `tokenizers` library: Split (the Llama-3 regex, every behavior), Metaspace, decoders,
// added-token splits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decoder.h"
#include "mt/text/added_token_splitter.h"
#include "pre_tokenizer.h"

namespace mt::plugins::hf_tokenizer {
namespace {

using Strings = std::vector<std::string>;

constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Strings split_pieces(const std::string& text, const std::string& pattern,
                     SplitBehavior behavior = SplitBehavior::kIsolated, bool invert = false) {
    PreTokenizerStep split{};
    split.kind = PreTokenizerStep::kSplit;
    split.regex.emplace(pattern);
    split.behavior = behavior;
    split.invert = invert;
    PreTokenizer pre({split});
    std::vector<std::string_view> pieces;
    pre.run(text, true, pieces);
    return Strings(pieces.begin(), pieces.end());
}

TEST(HfPipeline, Llama3Split) {
    // pre_tokenizers.Split(Regex(<Llama-3 pattern>), "isolated").pre_tokenize_str(text)
    auto llama3_pieces = [](const std::string& text) { return split_pieces(text, kLlama3Pattern); };
    EXPECT_EQ(llama3_pieces("Hello world's 12345!!\n\n"),
              (Strings{"Hello", " world", "'s", " ", "123", "45", "!!\n\n"}));
    EXPECT_EQ(llama3_pieces("  \n  x"), (Strings{"  \n", " ", " x"}));
    EXPECT_EQ(llama3_pieces("x \t y"), (Strings{"x", " \t", " y"}));
    EXPECT_EQ(llama3_pieces("a'LL 'Ve"), (Strings{"a", "'LL", " '", "Ve"}));
    EXPECT_EQ(llama3_pieces("\"quoted\" ?!\r\n z"), (Strings{"\"quoted", "\"", " ?!\r\n", " z"}));
    EXPECT_EQ(llama3_pieces("   "), (Strings{"   "}));
    EXPECT_EQ(llama3_pieces("x'\u017f"), (Strings{"x", "'\u017f"}));  // (?i) folds s to U+017F
}

TEST(HfPipeline, SplitBehaviors) {
    // pre_tokenizers.Split(Regex("-+"), behavior, invert).pre_tokenize_str("a--b-c--")
    const std::string text = "a--b-c--";
    using B = SplitBehavior;
    EXPECT_EQ(split_pieces(text, "-+", B::kRemoved), (Strings{"a", "b", "c"}));
    EXPECT_EQ(split_pieces(text, "-+", B::kIsolated), (Strings{"a", "--", "b", "-", "c", "--"}));
    EXPECT_EQ(split_pieces(text, "-+", B::kMergedWithPrevious), (Strings{"a--", "b-", "c--"}));
    EXPECT_EQ(split_pieces(text, "-+", B::kMergedWithNext), (Strings{"a", "--b", "-c", "--"}));
    EXPECT_EQ(split_pieces(text, "-", B::kContiguous), (Strings{"a", "--", "b", "-", "c", "--"}));
    EXPECT_EQ(split_pieces(text, "-+", B::kRemoved, true), (Strings{"--", "-", "--"}));
    EXPECT_EQ(split_pieces(text, "-+", B::kMergedWithPrevious, true),
              (Strings{"a", "--b", "-c", "--"}));
}

TEST(HfPipeline, MetaspacePrependsOnlyAtTheStartWithFirst) {
    PreTokenizerStep meta{};
    meta.kind = PreTokenizerStep::kMetaspace;
    meta.replacement = "\xE2\x96\x81";
    meta.prepend_scheme = PrependScheme::kFirst;
    meta.split = true;
    PreTokenizer pre({meta});
    std::vector<std::string_view> pieces;
    pre.run("Hey  you", true, pieces);
    EXPECT_EQ(Strings(pieces.begin(), pieces.end()),
              (Strings{"\xE2\x96\x81Hey", "\xE2\x96\x81", "\xE2\x96\x81you"}));
    pre.run("Hey", false, pieces);
    EXPECT_EQ(Strings(pieces.begin(), pieces.end()), (Strings{"Hey"}));
    pre.run(" x", true, pieces);  // already starts with the replacement: nothing prepended
    EXPECT_EQ(Strings(pieces.begin(), pieces.end()), (Strings{"\xE2\x96\x81x"}));
}

TEST(HfPipeline, Decoders) {
    DecoderStep meta{DecoderStep::kMetaspace};
    meta.content = "\xE2\x96\x81";
    // decoders.Metaspace().decode(["▁a▁b", "▁c"]): the first token loses every "▁".
    EXPECT_EQ(decode_tokens(std::vector<DecoderStep>{meta}, {"\xE2\x96\x81"
                                                             "a\xE2\x96\x81"
                                                             "b",
                                                             "\xE2\x96\x81"
                                                             "c"}),
              "ab c");
    DecoderStep strip{DecoderStep::kStrip};
    strip.content = " ";
    strip.start = 1;
    strip.stop = 1;
    EXPECT_EQ(decode_tokens(std::vector<DecoderStep>{strip}, {"  a  ", " b "}), " a b");
    // Byte tokens of either case; a run that is not UTF-8 gives one U+FFFD per token.
    EXPECT_EQ(decode_tokens(std::vector<DecoderStep>{{DecoderStep::kByteFallback}},
                            {"<0xe2>", "<0xE2>", "a"}),
              "\xEF\xBF\xBD\xEF\xBF\xBD"
              "a");
    EXPECT_EQ(decode_tokens(std::vector<DecoderStep>{{DecoderStep::kByteFallback}},
                            {"<0xE2>", "<0x82>", "<0xAC>"}),
              "\xE2\x82\xAC");
    EXPECT_EQ(decode_tokens(std::nullopt, {"a", "b"}), "a b");
}

TEST(HfPipeline, AddedTokensStripWhiteSpace) {
    text::AddedTokenMatch mask{"<mask>", 7, true, false};
    text::AddedTokenMatch tag{"[T]", 8, false, true};
    text::AddedTokenSplitter splitter({mask, tag});
    std::vector<text::AddedTokenSplitter::Segment> parts;
    splitter.split("a  <mask>  b[T]\u00a0 c<mask>", parts);
    ASSERT_EQ(parts.size(), 6u);
    EXPECT_EQ(parts[0].end, 1u);    // "a"
    EXPECT_EQ(parts[1].begin, 1u);  // "  <mask>" (lstrip)
    EXPECT_EQ(parts[1].id, 7);
    EXPECT_EQ(parts[2].id, -1);  // "  b"
    EXPECT_EQ(parts[3].id, 8);   // "[T]\u00a0 " (rstrip, Unicode space)
    EXPECT_EQ(parts[3].end - parts[3].begin, 3u + 2u + 1u);
    EXPECT_EQ(parts[4].id, -1);  // "c"
    EXPECT_EQ(parts[5].id, 7);
    splitter.split("", parts);
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].id, -1);
}

}  // namespace
}  // namespace mt::plugins::hf_tokenizer
