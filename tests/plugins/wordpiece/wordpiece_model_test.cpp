// Greedy longest-match-first WordPiece (Megatron's WordpieceTokenizer) and the token table
// behind it, on a hand-made vocabulary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "token_table.h"
#include "wordpiece_model.h"

namespace mt::plugins::wordpiece {
namespace {

using Ids = std::vector<int32_t>;

TokenTable make_table(const std::vector<std::string>& tokens) {
    TokenTable t;
    for (size_t i = 0; i < tokens.size(); ++i) t.insert(tokens[i], static_cast<int32_t>(i));
    return t;
}

const std::vector<std::string> kTokens = {"[UNK]", "un",  "##aff", "##able",    "a",
                                          "##b",   "ab",  "##c",   "\xc3\xa9",  "##\xc3\xa9",
                                          "x",     "##x", "##",    "abcdefghij"};

Ids encode(std::string_view word, Ids out = {}) {
    static const TokenTable table = make_table(kTokens);
    static const WordPieceModel model(table, 0);
    std::vector<uint32_t> bounds;
    model.encode_word(word, out, bounds);
    return out;
}

TEST(TokenTable, FindInsertReplace) {
    TokenTable t = make_table(kTokens);
    EXPECT_EQ(t.size(), kTokens.size());
    EXPECT_EQ(t.find("##aff"), 2);
    EXPECT_EQ(t.find("aff"), -1);
    EXPECT_EQ(t.find(""), -1);
    EXPECT_EQ(t.max_key_bytes(), 10u);
    t.insert("un", 99);  // a later duplicate wins, as in a Python dict
    EXPECT_EQ(t.find("un"), 99);
    EXPECT_EQ(t.size(), kTokens.size());
    t.insert("", 7);
    EXPECT_EQ(t.find(""), 7);
    size_t seen = 0;
    t.for_each([&](std::string_view, int32_t) { ++seen; });
    EXPECT_EQ(seen, t.size());
}

TEST(TokenTable, ManyKeysSurviveGrowth) {
    TokenTable t;
    for (int i = 0; i < 50000; ++i) t.insert("k" + std::to_string(i), i);
    for (int i = 0; i < 50000; i += 997) EXPECT_EQ(t.find("k" + std::to_string(i)), i);
    EXPECT_EQ(t.find("k50000"), -1);
}

TEST(TokenTable, EveryKeyLength) {
    // Keys of 0..40 bytes exercise each way a key's first 16 bytes are loaded and the tail.
    TokenTable t;
    const std::string text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
    for (size_t n = 0; n <= 40; ++n) t.insert(text.substr(0, n), static_cast<int32_t>(n));
    for (size_t n = 0; n <= 40; ++n) {
        EXPECT_EQ(t.find(text.substr(0, n)), static_cast<int32_t>(n)) << n;
        if (n > 0) {
            std::string other = text.substr(0, n);
            other[n - 1] = '#';  // differs in the last byte only
            EXPECT_EQ(t.find(other), -1) << n;
        }
    }
    size_t seen = 0;
    t.for_each([&](std::string_view key, int32_t id) {
        EXPECT_EQ(key, text.substr(0, static_cast<size_t>(id)));
        ++seen;
    });
    EXPECT_EQ(seen, 41u);
}

TEST(WordPiece, GreedyLongestMatchFirst) {
    EXPECT_EQ(encode("unaffable"), (Ids{1, 2, 3}));
    EXPECT_EQ(encode("abc"), (Ids{6, 7}));  // "ab" then "##c", not "a" "##b" "##c"
    EXPECT_EQ(encode("abcdefghij"), Ids{13});
    EXPECT_EQ(encode("a"), Ids{4});
}

TEST(WordPiece, UnmatchableWordIsOneUnk) {
    // "ab" matches but "##d" does not: the whole word becomes [UNK], nothing partial.
    EXPECT_EQ(encode("abd"), Ids{0});
    EXPECT_EQ(encode("zzz"), Ids{0});
    EXPECT_EQ(encode("abd", Ids{42}), (Ids{42, 0}));  // earlier ids are kept
}

TEST(WordPiece, CodePointBoundaries) {
    EXPECT_EQ(encode("\xc3\xa9\xc3\xa9\xc3\xa9"), (Ids{8, 9, 9}));
    EXPECT_EQ(encode("a\xc3\xa9"), (Ids{4, 9}));
}

TEST(WordPiece, LongWords) {
    // Megatron's limit is 200 code points (Hugging Face's is 100).
    Ids expected(200, 11);
    expected[0] = 10;
    EXPECT_EQ(encode(std::string(200, 'x')), expected);
    EXPECT_EQ(encode(std::string(201, 'x')), Ids{0});
    std::string accented;
    for (int i = 0; i < 200; ++i) accented += "\xc3\xa9";  // 400 bytes, 200 code points
    EXPECT_EQ(encode(accented).size(), 200u);
    EXPECT_EQ(encode(accented + "\xc3\xa9"), Ids{0});
}

}  // namespace
}  // namespace mt::plugins::wordpiece
