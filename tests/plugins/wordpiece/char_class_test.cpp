// Character classes and UTF-8 helpers of the WordPiece tokenizer, checked code point by code
// point against Megatron's _is_control / _is_whitespace / _is_punctuation / _is_chinese_char.
#include <gtest/gtest.h>

#include <initializer_list>

#include "char_class.h"

namespace mt::plugins::wordpiece {
namespace {

using Cps = std::initializer_list<char32_t>;

uint8_t flags(char32_t cp) {
    return char_flags_slow(cp);
}

TEST(CharClass, DroppedCharacters) {
    for (char32_t cp : Cps{0x00, 0x01, 0x07, 0x0B, 0x0C, 0x1B, 0x1C, 0x1F, 0x7F, 0x85, 0xAD, 0x200B,
                           0x200D, 0x200E, 0x2060, 0xFEFF, 0xFFFD, 0xE0001})
        EXPECT_EQ(flags(cp), kDrop) << std::hex << "U+" << static_cast<uint32_t>(cp);
    // Private use and unassigned are category C but not Cc/Cf: Megatron keeps them.
    for (char32_t cp : Cps{0xE000, 0xF0000, 0x0378}) EXPECT_FALSE(flags(cp) & kDrop);
}

TEST(CharClass, Separators) {
    for (char32_t cp : Cps{0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x1680, 0x2002, 0x200A, 0x2028, 0x2029,
                           0x202F, 0x205F, 0x3000})
        EXPECT_TRUE(flags(cp) & kSeparator) << std::hex << "U+" << static_cast<uint32_t>(cp);
    for (char32_t cp : Cps{U'a', U'_', 0x180E, 0x200B}) EXPECT_FALSE(flags(cp) & kSeparator);
}

TEST(CharClass, Punctuation) {
    for (char32_t cp = 33; cp < 127; ++cp) {
        const bool alnum =
            (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
        EXPECT_EQ((flags(cp) & kPunctuation) != 0, !alnum) << static_cast<char>(cp);
    }
    for (char32_t cp : Cps{0x2019, 0x201C, 0x00A7, 0x00BF, 0x060C, 0x061F, 0x3002, 0xFF01, 0x2014})
        EXPECT_TRUE(flags(cp) & kPunctuation) << std::hex << "U+" << static_cast<uint32_t>(cp);
    // Symbols outside ASCII (Sc, Sm, So) are not punctuation.
    for (char32_t cp : Cps{0x20AC, 0x00A3, 0x2211, 0x00B2, 0x1F600})
        EXPECT_FALSE(flags(cp) & kPunctuation) << std::hex << "U+" << static_cast<uint32_t>(cp);
}

TEST(CharClass, CjkRanges) {
    const std::pair<char32_t, char32_t> ranges[] = {
        {0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
        {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0xF900, 0xFAFF},   {0x2F800, 0x2FA1F}};
    auto in_ranges = [&](char32_t cp) {
        for (auto [lo, hi] : ranges)
            if (cp >= lo && cp <= hi) return true;
        return false;
    };
    // Each range's ends are in; the code points just outside are in only where ranges touch.
    for (auto [lo, hi] : ranges)
        for (char32_t cp : Cps{lo - 1, lo, hi, hi + 1})
            EXPECT_EQ((flags(cp) & kCjk) != 0, in_ranges(cp))
                << std::hex << static_cast<uint32_t>(cp);
    // Kana and Hangul are not in the ranges.
    for (char32_t cp : Cps{0x3042, 0x30C6, 0xAC00, 0x1100}) EXPECT_FALSE(flags(cp) & kCjk);
}

TEST(CharClass, LowerInert) {
    for (char32_t cp : Cps{U'a', U'1', U'-', 0xDF, 0xFB01, 0x03C3, 0x4E00, 0x2019, 0x1F600})
        EXPECT_TRUE(flags(cp) & kLowerInert) << std::hex << "U+" << static_cast<uint32_t>(cp);
    // Changed by lower(), decomposed by NFD, or a Mn mark.
    for (char32_t cp :
         Cps{U'A', 0xC9, 0xE9, 0x0130, 0x03A3, 0x2126, 0x212A, 0xF900, 0x0301, 0xFE0F, 0x1E9E})
        EXPECT_FALSE(flags(cp) & kLowerInert) << std::hex << "U+" << static_cast<uint32_t>(cp);
}

TEST(CharClass, BmpTableMatchesSlowPath) {
    const uint8_t* table = bmp_char_flags();
    for (char32_t cp : Cps{0x00, 0x41, 0xA0, 0x2028, 0x4E00, 0xFFFD})
        EXPECT_EQ(char_flags(table, cp), flags(cp));
    EXPECT_EQ(char_flags(table, 0x20000), kCjk | kLowerInert);
}

TEST(CharClass, PythonSpaceAndStrip) {
    for (char32_t cp : Cps{0x09, 0x0B, 0x1C, 0x1F, 0x20, 0x85, 0xA0, 0x2028, 0x2029, 0x3000})
        EXPECT_TRUE(is_python_space(cp)) << std::hex << "U+" << static_cast<uint32_t>(cp);
    for (char32_t cp : Cps{U'a', 0x200B, 0xFEFF, 0x180E}) EXPECT_FALSE(is_python_space(cp));
    EXPECT_EQ(python_strip(" \t a b \n"), "a b");
    EXPECT_EQ(python_strip("\xc2\xa0x\xe3\x80\x80"), "x");
    EXPECT_EQ(python_strip("\xef\xbb\xbfx"), "\xef\xbb\xbfx");  // U+FEFF is not whitespace
    EXPECT_EQ(python_strip("   "), "");
    EXPECT_EQ(python_strip(""), "");
}

TEST(Utf8, DecodesAndSkipsIllFormedBytes) {
    auto decode = [](std::string_view s) {
        std::u32string out;
        for (size_t i = 0; i < s.size();) {
            const char32_t cp = next_code_point(s, i);
            if (cp != kInvalidCodePoint) out.push_back(cp);
        }
        return out;
    };
    EXPECT_EQ(decode("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), U"a\u00e9\u20ac\U0001F600");
    EXPECT_EQ(decode("a\xff"
                     "b"),
              U"ab");
    EXPECT_EQ(decode("\xc0\x80"), U"");          // overlong
    EXPECT_EQ(decode("\xed\xa0\x80x"), U"x");    // surrogate
    EXPECT_EQ(decode("\xf4\x90\x80\x80"), U"");  // above U+10FFFF
    EXPECT_EQ(decode("\xe2\x82"
                     "a"),
              U"a");  // truncated
    EXPECT_EQ(decode("\xe2\x82\xe2\x82\xac"), U"\u20ac");
    std::string encoded;
    for (char32_t cp : Cps{U'a', U'\u00e9', U'\u20ac', U'\U0001F600'}) append_utf8(encoded, cp);
    EXPECT_EQ(encoded, "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace mt::plugins::wordpiece
