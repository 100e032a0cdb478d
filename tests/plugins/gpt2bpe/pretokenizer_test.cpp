// The GPT-2 pre-tokenisation scanner against the regex's pieces: hand-written rules here, and
// every string of nasty_strings.json against Python regex's findall (made by make_fixtures.py).
#include "pretokenizer.h"

#include <gtest/gtest.h>

#include "mt/error.h"
#include "test_util.h"

namespace mt::plugins::gpt2bpe {
namespace {

using Pieces = std::vector<std::string>;

Pieces pieces(std::string_view text) {
    Pieces out;
    PieceScanner scanner(text, UnicodeClasses::get());
    const uint8_t* first;
    const uint8_t* last;
    while (scanner.next(first, last))
        out.emplace_back(reinterpret_cast<const char*>(first), last - first);
    return out;
}

TEST(Gpt2PreTokenizer, EmptyText) {
    EXPECT_TRUE(pieces("").empty());
}

TEST(Gpt2PreTokenizer, Contractions) {
    EXPECT_EQ(pieces("don't"), (Pieces{"don", "'t"}));
    EXPECT_EQ(pieces("we're they've you'll I'm he'd"),
              (Pieces{"we", "'re", " they", "'ve", " you", "'ll", " I", "'m", " he", "'d"}));
    EXPECT_EQ(pieces("'sup"), (Pieces{"'s", "up"}));        // no word boundary needed
    EXPECT_EQ(pieces("DON'T"), (Pieces{"DON", "'", "T"}));  // lower case only
    EXPECT_EQ(pieces("it''s"), (Pieces{"it", "''", "s"}));  // punctuation run wins
    EXPECT_EQ(pieces(" 's"), (Pieces{" '", "s"}));
    EXPECT_EQ(pieces("it\u2019s"), (Pieces{"it", "\u2019", "s"}));  // U+2019 is not an apostrophe
    EXPECT_EQ(pieces("'l"), (Pieces{"'", "l"}));
}

TEST(Gpt2PreTokenizer, SpacePrefixIsOneLiteralSpace) {
    EXPECT_EQ(pieces("hello world"), (Pieces{"hello", " world"}));
    EXPECT_EQ(pieces(" 42 !!"), (Pieces{" 42", " !!"}));
    EXPECT_EQ(pieces("a\tb"), (Pieces{"a", "\t", "b"}));
    EXPECT_EQ(pieces("a\u00a0b"), (Pieces{"a", "\u00a0", "b"}));  // NBSP is \s but not " "
    EXPECT_EQ(pieces(" \u00a0a"), (Pieces{" ", "\u00a0", "a"}));
}

TEST(Gpt2PreTokenizer, WhitespaceRunLeavesItsLastCharacter) {
    EXPECT_EQ(pieces("a   b"), (Pieces{"a", "  ", " b"}));
    EXPECT_EQ(pieces("  \nfoo"), (Pieces{"  ", "\n", "foo"}));
    EXPECT_EQ(pieces("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
    EXPECT_EQ(pieces("a  \n  b"), (Pieces{"a", "  \n ", " b"}));
    EXPECT_EQ(pieces("a   "), (Pieces{"a", "   "}));  // at the end the run stays whole
    EXPECT_EQ(pieces("   "), (Pieces{"   "}));
    EXPECT_EQ(pieces(" "), (Pieces{" "}));
    EXPECT_EQ(pieces("\r\n"), (Pieces{"\r\n"}));
    EXPECT_EQ(pieces("line1\r\nline2"), (Pieces{"line", "1", "\r", "\n", "line", "2"}));
    EXPECT_EQ(pieces("  !"), (Pieces{" ", " !"}));
}

TEST(Gpt2PreTokenizer, ClassesOfRuns) {
    EXPECT_EQ(pieces("abc123def"), (Pieces{"abc", "123", "def"}));
    EXPECT_EQ(pieces("3.14"), (Pieces{"3", ".", "14"}));
    EXPECT_EQ(pieces("\u00bd\u2167x"), (Pieces{"\u00bd\u2167", "x"}));  // No and Nl are \p{N}
    EXPECT_EQ(pieces("cafe\u0301s"), (Pieces{"cafe", "\u0301", "s"}));  // Mn is not \p{L}
    EXPECT_EQ(pieces("\u65e5\u672c\u8a9e"), (Pieces{"\u65e5\u672c\u8a9e"}));
    EXPECT_EQ(pieces("a\U0001F600\u200d\U0001F600b"),
              (Pieces{"a", "\U0001F600\u200d\U0001F600", "b"}));
    EXPECT_EQ(pieces("hello!!! world???"), (Pieces{"hello", "!!!", " world", "???"}));
}

TEST(Gpt2PreTokenizer, SeparatorControlsAreNotSpace) {
    // U+001C..U+001F satisfy str.isspace() but not regex's \s; U+0085 is \s.
    EXPECT_EQ(pieces("a\x1c\x1d b"), (Pieces{"a", "\x1c\x1d", " b"}));
    EXPECT_EQ(pieces("a\u0085\u0085b"), (Pieces{"a", "\u0085", "\u0085", "b"}));
    EXPECT_EQ(pieces("a\u200bb"), (Pieces{"a", "\u200b", "b"}));  // ZWSP is not White_Space
}

TEST(Gpt2PreTokenizer, LongRuns) {
    const std::string word(100000, 'x');
    EXPECT_EQ(pieces(word), Pieces{word});
    const std::string spaces(5000, ' ');
    EXPECT_EQ(pieces(spaces + "a"), (Pieces{spaces.substr(1), " a"}));
}

TEST(Gpt2PreTokenizer, InvalidUtf8IsAnError) {
    for (std::string bad : {std::string("\xff"), std::string("ab\xc3"), std::string("\xc0\xaf"),
                            std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                            std::string("\x80"), std::string("a b\xe2\x82")}) {
        try {
            pieces(bad);
            ADD_FAILURE() << "no error for invalid UTF-8 of " << bad.size() << " bytes";
        } catch (const mt::Error& e) {
            EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte"), std::string::npos)
                << e.what();
        }
    }
    try {
        pieces("abc d\xff");
    } catch (const mt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("at byte 5 (bytes FF)"), std::string::npos)
            << e.what();
    }
}

TEST(Gpt2PreTokenizer, NastyStringsMatchPythonRegex) {
    simdjson::dom::parser parser;
    simdjson::dom::element cases = parser.load(test::fixture("nasty_strings.json").string());
    size_t count = 0;
    for (simdjson::dom::element c : cases.get_array()) {
        const std::string text = test::string_of(c["text"]);
        Pieces expected;
        for (simdjson::dom::element p : c["pieces"].get_array())
            expected.push_back(test::string_of(p));
        EXPECT_EQ(pieces(text), expected) << "case " << count;
        ++count;
    }
    EXPECT_GT(count, 300u);
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
