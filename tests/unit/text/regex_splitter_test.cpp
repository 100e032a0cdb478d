// RegexSplitter: the matches of tokenizers' split patterns, the constructs it refuses by name,
// the escapes whose meaning differs between PCRE2 and tiktoken / tokenizers, and characters newer
// than PCRE2's Unicode tables. (Whole tokenizers are checked against tiktoken and tokenizers in
// tests/plugins/tiktoken and tests/plugins/hf_tokenizer.)
#include "mt/text/regex_splitter.h"

#include <gtest/gtest.h>

#include "mt/error.h"

namespace mt::text {
namespace {

std::vector<std::string> pieces(const RegexSplitter& splitter, std::string_view text) {
    std::vector<RegexSplitter::Match> matches;
    splitter.find_all(text, matches);
    std::vector<std::string> out;
    for (const auto& m : matches) out.emplace_back(text.substr(m.begin, m.end - m.begin));
    return out;
}

std::string error_of(std::string_view pattern) {
    try {
        RegexSplitter{pattern};
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

using Pieces = std::vector<std::string>;

TEST(RegexSplitter, FindsLeftmostFirstMatchesAndSkipsTheRest) {
    const RegexSplitter gpt2(
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
    EXPECT_EQ(pieces(gpt2, "Hello world's  12 !?\n"),
              (Pieces{"Hello", " world", "'s", " ", " 12", " !?", "\n"}));
    const RegexSplitter digits(R"(\d{1,2})");
    EXPECT_EQ(pieces(digits, "a12345b"), (Pieces{"12", "34", "5"}));
    EXPECT_TRUE(pieces(digits, "").empty());
}

TEST(RegexSplitter, EscapesMeanWhatTheyMeanInTiktokenAndTokenizers) {
    // \s is Unicode White_Space: not U+180E (PCRE2's own \s takes it), but U+3000.
    const RegexSplitter space(R"(\s+)");
    EXPECT_EQ(pieces(space,
                     "a\xE1\xA0\x8E"
                     "b\xE3\x80\x80"
                     "c"),
              (Pieces{"\xE3\x80\x80"}));
    // \v is the vertical tab alone (PCRE2's own \v is every vertical space).
    EXPECT_EQ(pieces(RegexSplitter(R"(\v)"), "\n\v\r"), (Pieces{"\v"}));
    EXPECT_EQ(pieces(RegexSplitter(R"(\u0041|\x{42}|\x43)"), "ABCD"), (Pieces{"A", "B", "C"}));
    // (?i) over ASCII letters folds as Unicode does: s also matches U+017F, k U+212A.
    EXPECT_EQ(pieces(RegexSplitter("(?i:'s|'k)"), "'S 'ſ 'K 'K"), (Pieces{"'S", "'ſ", "'K", "'K"}));
}

TEST(RegexSplitter, RefusesWhatWouldMatchDifferently) {
    for (const auto& [pattern, what] : std::vector<std::pair<std::string, std::string>>{
             {R"(\w+)", "the escape \\w"},
             {R"(\bx)", "the escape \\b"},
             {"^a", "the anchor '^'"},
             {"a$", "the anchor '$'"},
             {"(?x)a b", "the flag (?x)"},
             {R"(\p{Greek})", "\\p{Greek} (only general categories are)"},
             {R"((?i)\p{Lu})", "(?i) over a Unicode property"},
             {"(?i:é)", "(?i) over a literal character outside ASCII"},
             {"[a[b]]", "a nested character class"},
             {"[[:alpha:]]", "a POSIX class"},
             {"[a&&b]", "the class operation '&&'"},
             {"a{,3}", "the quantifier {,n}"},
             {"a*", "can match the empty string"},
             {"(a", "unbalanced"},
         }) {
        const std::string error = error_of(pattern);
        EXPECT_NE(error.find(what), std::string::npos) << pattern << ": " << error;
        EXPECT_NE(error.find("regex '" + pattern + "'"), std::string::npos) << error;
    }
}

TEST(RegexSplitter, ClassesCharactersAsUnicode16) {
    // U+1C89 CYRILLIC CAPITAL LETTER TJE and U+1C8A (small) came in Unicode 16.0, U+31350 (a
    // CJK ideograph) in 15.0: letters to tiktoken and tokenizers, unassigned to PCRE2 10.42.
    const RegexSplitter upper(R"(\p{Lu}+|\p{Ll}+|\p{Lo}+|\P{L})");
    EXPECT_EQ(pieces(upper,
                     "A\xE1\xB2\x89"
                     "b\xE1\xB2\x8A"
                     "\xF0\xB1\x8D\x90"
                     "!"),
              (Pieces{"A\xE1\xB2\x89", "b\xE1\xB2\x8A", "\xF0\xB1\x8D\x90", "!"}));
    // A pattern naming non-ASCII characters itself could treat a stand-in otherwise: refused.
    const RegexSplitter literal("[一-龥]+|\\p{L}+");
    EXPECT_EQ(pieces(literal, "漢字abc"), (Pieces{"漢字", "abc"}));
    std::vector<RegexSplitter::Match> out;
    try {
        literal.find_all("x\xE1\xB2\x89", out);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("U+1C89 (at byte 1"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace mt::text
