// Reading vocab.json and merges.txt: what Megatron accepts is read the same way (escapes,
// repeated keys, CRLF, the skipped first and unterminated last line), and malformed files give
// an mt::Error naming the file, line and column.
#include "bpe_files.h"

#include <gtest/gtest.h>

#include "mt/error.h"
#include "test_support.h"

namespace mt::plugins::gpt2bpe {
namespace {

using mt::test::error_of;

TEST(Gpt2BpeVocabFile, ReadsEscapesAndKeepsFileOrder) {
    auto v = parse_vocab_json(
        " {\"a\": 0, \"\\u0120the\":1,\"\\\"q\\\\\\/\":2 ,\n\"\\ud83d\\ude00\": 3, \"\\ud800\": 4, "
        "\"\\n\\t\\r\\b\\f\": 5, \"a\": 6, \"-0\": -0}\n",
        "v.json");
    ASSERT_EQ(v.size(), 8u);
    EXPECT_EQ(v[0].token, "a");
    EXPECT_EQ(v[1].token, "\u0120the");
    EXPECT_EQ(v[2].token, "\"q\\/");
    EXPECT_EQ(v[3].token, "\U0001F600");
    EXPECT_EQ(v[4].token, "\xED\xA0\x80");  // a lone surrogate, kept as Python keeps it
    EXPECT_EQ(v[5].token, "\n\t\r\b\f");
    EXPECT_EQ(v[6].token, "a");
    EXPECT_EQ(v[6].id, 6);
    EXPECT_EQ(v[7].id, 0);
    EXPECT_TRUE(parse_vocab_json("{}", "v.json").empty());
}

TEST(Gpt2BpeVocabFile, MalformedFilesNameLineAndColumn) {
    struct Case {
        const char* text;
        const char* message;
    };
    const Case cases[] = {
        {"", "v.json:1:1: invalid vocab file: expected '{'"},
        {"[1]", "v.json:1:1: invalid vocab file: expected '{'"},
        {"{\"a\": 1,\n \"b\" 2}", "v.json:2:6: invalid vocab file: expected ':'"},
        {"{\"a\": 1,}", "v.json:1:9: invalid vocab file: expected a string key"},
        {"{\"a\": 1", "v.json:1:8: invalid vocab file: expected ',' or '}'"},
        {"{\"a\": 1.5}", "the id of \"a\" is not an integer"},
        {"{\"a\": 1e3}", "the id of \"a\" is not an integer"},
        {"{\"a\": \"1\"}", "the value of \"a\" is not an integer"},
        {"{\"a\": -3}", "v.json:1:2: invalid vocab file: the id of \"a\" is negative"},
        {"{\"a\": 01}", "leading zeros"},
        {"{\"a\": 4294967296}", "does not fit in 32 bits"},
        {"{\"a\": 1} x", "v.json:1:10: invalid vocab file: unexpected data after the vocab object"},
        {"{\"a\nb\": 1}", "v.json:1:4: invalid vocab file: control character in a string"},
        {"{\"a\xff\": 1}", "v.json:1:4: invalid vocab file: invalid UTF-8"},
        {"{\"\\x\": 1}", "unknown escape '\\x'"},
        {"{\"\\u12G4\": 1}", "bad hex digit"},
        {"{\"abc", "unterminated string"},
    };
    for (const Case& c : cases) {
        const std::string message = error_of([&] { parse_vocab_json(c.text, "v.json"); });
        EXPECT_NE(message.find(c.message), std::string::npos)
            << "input " << c.text << "\nmessage " << message;
    }
}

TEST(Gpt2BpeVocabFile, MissingFileIsNamed) {
    const std::string message = error_of([] { read_vocab_json("/nonexistent/vocab.json"); });
    EXPECT_NE(message.find("cannot open vocab file (--vocab-file) '/nonexistent/vocab.json'"),
              std::string::npos)
        << message;
    EXPECT_NE(error_of([] { read_vocab_json(""); }).find("needs a vocab file"), std::string::npos);
}

std::vector<std::pair<std::string, std::string>> pairs(const std::vector<MergeRule>& merges) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const MergeRule& m : merges) out.emplace_back(m.left, m.right);
    return out;
}
using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(Gpt2BpeMergesFile, SplitsLikeMegatron) {
    // The header goes, blank lines go, CRLF and lone CR end lines, any Python whitespace splits.
    EXPECT_EQ(
        pairs(parse_merges_txt("#version: 0.2\na b\r\n\r\nc d\re\tf\n  g \u00a0 h  \n", "m.txt")),
        (Pairs{{"a", "b"}, {"c", "d"}, {"e", "f"}, {"g", "h"}}));
    // \x1c..\x1f are str.split() separators too.
    EXPECT_EQ(pairs(parse_merges_txt("#v\na\x1c"
                                     "b\n",
                                     "m.txt")),
              (Pairs{{"a", "b"}}));
    // The first line is dropped even when it is not a header.
    EXPECT_EQ(pairs(parse_merges_txt("x y\na b\n", "m.txt")), (Pairs{{"a", "b"}}));
    // split('\n')[1:-1]: a last line without a newline is lost, as in Megatron.
    EXPECT_EQ(pairs(parse_merges_txt("#v\na b\nc d", "m.txt")), (Pairs{{"a", "b"}}));
    EXPECT_TRUE(parse_merges_txt("", "m.txt").empty());
    EXPECT_TRUE(parse_merges_txt("#version: 0.2", "m.txt").empty());
    EXPECT_TRUE(parse_merges_txt("#version: 0.2\n", "m.txt").empty());
}

TEST(Gpt2BpeMergesFile, MalformedLinesAreErrors) {
    EXPECT_NE(
        error_of([] {
            parse_merges_txt("#v\na b\nabc\n", "m.txt");
        }).find("m.txt:3: invalid merges file: expected two tokens separated by a space, found 1"),
        std::string::npos);
    EXPECT_NE(error_of([] { parse_merges_txt("#v\r\na b c\r\n", "m.txt"); }).find("m.txt:2:"),
              std::string::npos);
    EXPECT_NE(error_of([] {
                  parse_merges_txt("#v\na \xc3\n", "m.txt");
              }).find("m.txt:2:3: invalid merges file: invalid UTF-8"),
              std::string::npos);
    EXPECT_NE(error_of([] {
                  read_merges_txt("/nonexistent/merges.txt");
              }).find("cannot open merges file (--merge-file) '/nonexistent/merges.txt'"),
              std::string::npos);
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
