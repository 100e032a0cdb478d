// Each step of Megatron's BERT BasicTokenizer (clean text, CJK spacing, whitespace split,
// lower-case + accent stripping, punctuation split), observed through the words it produces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "basic_tokenizer.h"

namespace mt::plugins::wordpiece {
namespace {

using namespace std::string_view_literals;
using Words = std::vector<std::string>;

Words words(std::string_view text, bool lower_case) {
    BasicTokenizer basic(lower_case);
    BasicTokenizer::Scratch scratch;
    Words out;
    basic.tokenize(text, scratch, [&](std::string_view w) { out.emplace_back(w); });
    return out;
}
Words uncased(std::string_view text) {
    return words(text, true);
}
Words cased(std::string_view text) {
    return words(text, false);
}

TEST(BasicTokenizer, EmptyAndBlank) {
    EXPECT_EQ(uncased(""), Words{});
    EXPECT_EQ(uncased(" \t\r\n \xc2\xa0 "), Words{});
    EXPECT_EQ(cased("\x01\x02"), Words{});
}

TEST(BasicTokenizer, CleanTextDropsControlsAndJoins) {
    // Dropped characters vanish without splitting the word.
    EXPECT_EQ(cased("a\x00"
                    "b c\x01"
                    "d"sv),
              (Words{"ab", "cd"}));
    EXPECT_EQ(cased("x\xef\xbf\xbdy"), Words{"xy"});  // U+FFFD
    EXPECT_EQ(cased("a\xe2\x80\x8b"
                    "b\xc2\xad"
                    "c"),
              Words{"abc"});  // U+200B, soft hyphen
    EXPECT_EQ(cased("a\x0b"
                    "b\x0c"
                    "c\x1c"
                    "d"),
              Words{"abcd"});  // Cc, though Python spaces
    EXPECT_EQ(cased("a\xc2\x85"
                    "b"),
              Words{"ab"});  // U+0085 (Cc)
    // Private use (Co) stays.
    EXPECT_EQ(cased("x\xee\x80\x80y"), Words{"x\xee\x80\x80y"});
}

TEST(BasicTokenizer, WhitespaceSplit) {
    EXPECT_EQ(cased("  a\tb\r\nc\rd  "), (Words{"a", "b", "c", "d"}));
    EXPECT_EQ(cased("a\xc2\xa0"
                    "b\xe3\x80\x80"
                    "c\xe2\x80\x89"
                    "d"),
              (Words{"a", "b", "c", "d"}));
    // U+2028/U+2029 are not Zs, but Python's str.split() splits on them.
    EXPECT_EQ(cased("a\xe2\x80\xa8"
                    "b\xe2\x80\xa9"
                    "c"),
              (Words{"a", "b", "c"}));
}

TEST(BasicTokenizer, CjkCharactersAreWords) {
    EXPECT_EQ(cased("ab\xe4\xb8\xad\xe6\x96\x87"
                    "cd"),
              (Words{"ab", "\xe4\xb8\xad", "\xe6\x96\x87", "cd"}));
    EXPECT_EQ(cased("\xf0\xa0\x80\x80x"), (Words{"\xf0\xa0\x80\x80", "x"}));  // U+20000
    // Hiragana is outside the CJK ranges: one word.
    EXPECT_EQ(cased("\xe3\x81\x82\xe3\x81\x84"), Words{"\xe3\x81\x82\xe3\x81\x84"});
    // A compatibility ideograph is spaced, then NFD maps it to its unified form (uncased only).
    EXPECT_EQ(uncased("\xef\xa4\x80"), Words{"\xe8\xb1\x88"});  // U+F900 -> U+8C48
    EXPECT_EQ(cased("\xef\xa4\x80"), Words{"\xef\xa4\x80"});
}

TEST(BasicTokenizer, LowerCaseOnlyWhenUncased) {
    EXPECT_EQ(uncased("HeLLo WORLD"), (Words{"hello", "world"}));
    EXPECT_EQ(cased("HeLLo WORLD"), (Words{"HeLLo", "WORLD"}));
}

TEST(BasicTokenizer, UnicodeLowerCase) {
    // Final sigma: ΟΔΟΣ -> οδος, a lone Σ -> σ.
    EXPECT_EQ(uncased("\xce\x9f\xce\x94\xce\x9f\xce\xa3"),
              Words{"\xce\xbf\xce\xb4\xce\xbf\xcf\x82"});
    EXPECT_EQ(uncased("\xce\xa3"), Words{"\xcf\x83"});
    // İ -> i + U+0307, whose mark is then stripped.
    EXPECT_EQ(uncased("\xc4\xb0stanbul"), Words{"istanbul"});
    // ẞ -> ß; ß stays.
    EXPECT_EQ(uncased("\xe1\xba\x9e\xc3\x9f"), Words{"\xc3\x9f\xc3\x9f"});
    // Kelvin sign -> k.
    EXPECT_EQ(uncased("\xe2\x84\xaa"), Words{"k"});
}

TEST(BasicTokenizer, StripAccentsOnlyWhenUncased) {
    EXPECT_EQ(uncased("Caf\xc3\xa9 cafe\xcc\x81"), (Words{"cafe", "cafe"}));
    // Cased: neither NFC nor NFD; decomposed input stays decomposed.
    EXPECT_EQ(cased("Caf\xc3\xa9 cafe\xcc\x81"), (Words{"Caf\xc3\xa9", "cafe\xcc\x81"}));
    // A word of marks only vanishes when uncased.
    EXPECT_EQ(uncased("a \xcc\x81 b"), (Words{"a", "b"}));
    EXPECT_EQ(cased("\xcc\x81"), Words{"\xcc\x81"});
}

TEST(BasicTokenizer, PunctuationSplit) {
    EXPECT_EQ(cased("hello,world!"), (Words{"hello", ",", "world", "!"}));
    EXPECT_EQ(cased("a--b"), (Words{"a", "-", "-", "b"}));
    EXPECT_EQ(cased("$5 ^x` ~"), (Words{"$", "5", "^", "x", "`", "~"}));
    EXPECT_EQ(cased("it\xe2\x80\x99s"), (Words{"it", "\xe2\x80\x99", "s"}));
    EXPECT_EQ(cased("\xe2\x82\xac"
                    "5"),
              Words{"\xe2\x82\xac"
                    "5"});  // € is Sc
    EXPECT_EQ(uncased("\xc2\xbfQU\xc3\x89?"), (Words{"\xc2\xbf", "que", "?"}));
}

TEST(BasicTokenizer, IllFormedUtf8IsSkipped) {
    EXPECT_EQ(cased("a\xff"
                    "b \xe2\x82"),
              Words{"ab"});
}

TEST(BasicTokenizer, LowerStripAccents) {
    BasicTokenizer::Scratch scratch;
    auto fold = [&](std::string_view w) {
        std::string out;
        BasicTokenizer::lower_strip_accents(w, scratch, out);
        return out;
    };
    EXPECT_EQ(fold("\xc3\x85NGSTR\xc3\x96M"), "angstrom");
    EXPECT_EQ(fold("\xe1\xbe\xbc"), "\xce\xb1");   // ᾼ -> ᾳ -> α + U+0345 -> α
    EXPECT_EQ(fold("\xc7\x84"), "\xc7\x86");       // Ǆ -> ǆ
    EXPECT_EQ(fold("TI\xe1\xba\xbeNG"), "tieng");  // Ế -> e
    EXPECT_EQ(fold("\xf0\x9f\x98\x80"
                   "A"),
              "\xf0\x9f\x98\x80"
              "a");
    EXPECT_EQ(fold(std::string(300, 'A')), std::string(300, 'a'));
}

TEST(BasicTokenizer, SplitOnPunctuationDirectly) {
    BasicTokenizer basic(false);
    Words pieces;
    basic.split_on_punctuation("..a.b..", [&](std::string_view p) { pieces.emplace_back(p); });
    EXPECT_EQ(pieces, (Words{".", ".", "a", ".", "b", ".", "."}));
}

}  // namespace
}  // namespace mt::plugins::wordpiece
