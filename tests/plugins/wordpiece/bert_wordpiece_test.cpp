// The BertWordPiece tokenizers end to end on tests/fixtures/wordpiece/tiny_vocab.txt: vocab
// reading as Megatron's load_vocab does it, the appended [BOS]/[EOS]/<extra_id_N>, special ids,
// decode's clean-up, errors, registration and concurrent use.
#include <gtest/gtest.h>

#include <thread>

#include "bert_vocab.h"
#include "bert_wordpiece_tokenizer.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::wordpiece {
namespace {

using Ids = std::vector<int32_t>;

std::string tiny_vocab() {
    return (test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt").string();
}

BertWordPieceTokenizer make(bool lower_case, int64_t extra_ids = 0) {
    TokenizerOptions o;
    o.vocab_file = tiny_vocab();
    o.vocab_extra_ids = extra_ids;
    return BertWordPieceTokenizer(o, lower_case);
}

using mt::test::error_of;

TEST(BertVocab, LinesAsPythonReadsThem) {
    // "\r\n", "\r" and "\n" end lines; tokens are stripped of Python whitespace; an empty line
    // is the token ""; a last line without newline counts.
    BertVocab v = BertVocab::from_text(
        "a\r\n  b \t\rc\n\n\xc2\xa0"
        "d\xc2\xa0\ne",
        "v.txt");
    EXPECT_EQ(v.size(), 6);
    EXPECT_EQ(v.id("a"), 0);
    EXPECT_EQ(v.id("b"), 1);
    EXPECT_EQ(v.id("c"), 2);
    EXPECT_EQ(v.id(""), 3);
    EXPECT_EQ(v.id("d"), 4);
    EXPECT_EQ(v.id("e"), 5);
    ASSERT_NE(v.token(4), nullptr);
    EXPECT_EQ(*v.token(4), "d");
    EXPECT_EQ(v.token(6), nullptr);
    EXPECT_EQ(v.token(-1), nullptr);
    // A byte order mark is not whitespace: it stays part of the first token.
    EXPECT_EQ(BertVocab::from_text("\xef\xbb\xbfx\n", "v.txt").id("\xef\xbb\xbfx"), 0);
}

TEST(BertVocab, RepeatedTokenKeepsItsLastLine) {
    BertVocab v = BertVocab::from_text("a\nb\na\n", "v.txt");
    EXPECT_EQ(v.size(), 2);  // len(vocab)
    EXPECT_EQ(v.id("a"), 2);
    EXPECT_EQ(v.token(0), nullptr);  // inv_vocab has no id 0
    // add_token uses len(vocab) == 2 as the new id, taking over inv_vocab[2] as Megatron does.
    v.add_token("[BOS]");
    EXPECT_EQ(v.id("[BOS]"), 2);
    EXPECT_EQ(*v.token(2), "[BOS]");
    EXPECT_EQ(v.size(), 3);
    v.add_token("[BOS]");  // present: no-op
    EXPECT_EQ(v.size(), 3);
}

TEST(BertVocab, Errors) {
    EXPECT_NE(error_of([] { BertVocab::from_text("", "empty.txt"); }).find("'empty.txt' is empty"),
              std::string::npos);
    const std::string bad = error_of([] { BertVocab::from_text("ok\nb\xff\n", "bad.txt"); });
    EXPECT_NE(bad.find("'bad.txt' line 2 is not valid UTF-8"), std::string::npos) << bad;
    const std::string missing = error_of([] { BertVocab::load("/nonexistent/vocab.txt"); });
    EXPECT_NE(missing.find("/nonexistent/vocab.txt"), std::string::npos) << missing;
}

TEST(BertWordPiece, SpecialIdsAndAppendedTokens) {
    auto t = make(true);
    EXPECT_EQ(t.name(), "BertWordPieceLowerCase");
    EXPECT_EQ(make(false).name(), "BertWordPieceCase");
    EXPECT_EQ(t.vocab_size(), 36 + 2);
    const SpecialIds& s = t.special_ids();
    EXPECT_EQ(s.pad, 0);
    EXPECT_EQ(s.cls, 2);
    EXPECT_EQ(s.sep, 3);
    EXPECT_EQ(s.mask, 4);
    EXPECT_EQ(s.bos, 36);
    EXPECT_EQ(s.eos, 37);
    EXPECT_EQ(s.eod, 37);
    EXPECT_EQ(t.eod(), 37);

    auto extra = make(true, 3);
    EXPECT_EQ(extra.vocab_size(), 36 + 2 + 3);
    EXPECT_EQ(extra.vocab().id("<extra_id_0>"), 38);
    EXPECT_EQ(extra.vocab().id("<extra_id_2>"), 40);
    EXPECT_EQ(extra.decode(Ids{38, 39, 40}), "<extra_id_0> <extra_id_1> <extra_id_2>");
}

TEST(BertWordPiece, VocabThatAlreadyHasBosEos) {
    test::TempDir dir;
    test::write_file(dir / "v.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n[EOS]\n");
    TokenizerOptions o;
    o.vocab_file = (dir / "v.txt").string();
    BertWordPieceTokenizer t(o, true);
    EXPECT_EQ(t.vocab_size(), 7);  // only [BOS] is new
    EXPECT_EQ(t.special_ids().eos, 5);
    EXPECT_EQ(t.special_ids().bos, 6);
}

TEST(BertWordPiece, Encode) {
    auto uncased = make(true);
    auto cased = make(false);
    EXPECT_EQ(uncased.encode("Hello, WORLD! unaffable"), (Ids{8, 10, 9, 12, 5, 6, 7}));
    EXPECT_EQ(cased.encode("Hello, WORLD!"), (Ids{1, 10, 1, 12}));
    EXPECT_EQ(uncased.encode("CAF\xc3\x89 cafe\xcc\x81"), (Ids{27, 27}));
    EXPECT_EQ(cased.encode("caf\xc3\xa9 cafe\xcc\x81"), (Ids{28, 1}));
    EXPECT_EQ(uncased.encode("it's \xe4\xb8\xad$5"), (Ids{31, 13, 14, 33, 34, 35}));
    EXPECT_EQ(uncased.encode("\xce\xa3\xce\xa3"), (Ids{25, 26}));  // ΣΣ -> σς
    EXPECT_EQ(uncased.encode(""), Ids{});
    Ids buffer{7};
    uncased.encode_append("hello", buffer);
    EXPECT_EQ(buffer, (Ids{7, 8}));
}

TEST(BertWordPiece, DecodeAsMegatron) {
    auto t = make(true);
    // " ##" joins pieces; clean-up removes the space before . ? ! , and around "'".
    EXPECT_EQ(t.decode(Ids{5, 6, 7}), "unaffable");
    EXPECT_EQ(t.decode(Ids{8, 10, 9, 11, 12}), "hello, world.!");
    EXPECT_EQ(t.decode(Ids{31, 13, 14}), "it's");
    EXPECT_EQ(t.decode(Ids{8, 13, 15}), "hello's");  // "hello ' ##s" -> "hello 's"
    EXPECT_EQ(t.decode(Ids{36, 8, 37}), "[BOS] hello [EOS]");
    EXPECT_EQ(t.decode(Ids{}), "");
    const std::string e = error_of([&] { t.decode(Ids{8, 38}); });
    EXPECT_NE(e.find("id 38"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { t.decode(Ids{-1}); }).find("id -1"), std::string::npos);
}

TEST(BertWordPiece, Errors) {
    TokenizerOptions none;
    EXPECT_NE(error_of([&] { BertWordPieceTokenizer(none, true); }).find("--vocab-file"),
              std::string::npos);
    TokenizerOptions missing;
    missing.vocab_file = "/nonexistent/bert-vocab.txt";
    EXPECT_NE(error_of([&] {
                  BertWordPieceTokenizer(missing, true);
              }).find("/nonexistent/bert-vocab.txt"),
              std::string::npos);

    test::TempDir dir;
    test::write_file(dir / "empty.txt", "");
    test::write_file(dir / "nomask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
    test::write_file(dir / "nounk.txt", "[PAD]\n[CLS]\n[SEP]\n[MASK]\n");
    for (const auto& [file, expected] :
         {std::pair<std::string, std::string>{"empty.txt", "is empty"},
          {"nomask.txt", "has no [MASK] token"},
          {"nounk.txt", "has no [UNK] token"}}) {
        TokenizerOptions o;
        o.vocab_file = (dir / file).string();
        const std::string e = error_of([&] { BertWordPieceTokenizer(o, false); });
        EXPECT_NE(e.find(expected), std::string::npos) << e;
        EXPECT_NE(e.find(o.vocab_file), std::string::npos) << e;
    }
}

TEST(BertWordPiece, RegisteredNames) {
    Registry registry;
    register_wordpiece(registry);
    TokenizerOptions o;
    o.vocab_file = tiny_vocab();
    EXPECT_EQ(registry.create_tokenizer("BertWordPieceLowerCase", o)->encode("HELLO"), Ids{8});
    EXPECT_EQ(registry.create_tokenizer("BertWordPieceCase", o)->encode("HELLO"), Ids{1});
}

TEST(BertWordPiece, ConcurrentEncodeMatchesSerial) {
    auto t = make(true);
    std::string text;
    for (int i = 0; i < 200; ++i)
        text += "Hello, W\xc3\x96RLD! unaffable caf\xc3\xa9 \xe4\xb8\xad ";
    const Ids expected = t.encode(text);
    std::vector<Ids> results(4);
    std::vector<std::thread> threads;
    for (auto& r : results)
        threads.emplace_back([&] {
            for (int k = 0; k < 20; ++k) r = t.encode(text);
        });
    for (auto& th : threads) th.join();
    for (const auto& r : results) EXPECT_EQ(r, expected);
}

}  // namespace
}  // namespace mt::plugins::wordpiece
