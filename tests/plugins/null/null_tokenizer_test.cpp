// NullTokenizer against Megatron-LM's _NullTokenizer: the cases of tests/fixtures/null/cases.json
// (made by make_fixtures.py from Megatron's code), plus special ids, errors and registration.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "core_v0_19_tokenizers.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "null_tokenizer.h"
#include "python_int.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::null {
namespace {

using Ids = std::vector<int32_t>;

NullTokenizer make(int64_t vocab_size) {
    TokenizerOptions o;
    o.vocab_size = vocab_size;
    return NullTokenizer(o);
}

using mt::test::error_of;

TEST(NullTokenizer, MegatronCases) {
    simdjson::dom::parser parser;
    simdjson::dom::element root =
        parser.load((test::fixtures_dir() / "null" / "cases.json").string());
    const auto t = make(int64_t(root["vocab_size_arg"]));
    EXPECT_EQ(t.vocab_size(), int64_t(root["vocab_size"]));
    EXPECT_EQ(t.eod(), int64_t(root["eod"]));
    size_t count = 0;
    for (simdjson::dom::element c : root["cases"].get_array()) {
        const std::string_view text = c["text"].get_string();
        simdjson::dom::array ids;
        if (c["ids"].get(ids) == simdjson::SUCCESS) {
            Ids expected;
            for (int64_t v : ids) expected.push_back(static_cast<int32_t>(v));
            EXPECT_EQ(t.encode(text), expected) << "text '" << text << "'";
            EXPECT_EQ(t.decode(expected), std::string_view(c["detokenized"].get_string()));
        } else {
            const std::string e = error_of([&] { t.encode(text); });
            EXPECT_NE(e.find("invalid literal for int() with base 10"), std::string::npos)
                << "text '" << text << "': " << e;
        }
        ++count;
    }
    EXPECT_GT(count, 40u);
}

TEST(NullTokenizer, SpecialIds) {
    const auto t = make(50000);
    EXPECT_EQ(t.name(), "NullTokenizer");
    EXPECT_EQ(t.vocab_size(), 50001);
    EXPECT_EQ(t.eod(), 50000);
    const SpecialIds& s = t.special_ids();
    EXPECT_EQ(s.cls, -1);
    EXPECT_EQ(s.sep, -1);
    EXPECT_EQ(s.mask, -1);
    EXPECT_FALSE(s.pad.has_value());
    EXPECT_FALSE(s.bos.has_value());
    EXPECT_FALSE(s.eos.has_value());
}

TEST(NullTokenizer, ErrorsNameThePiece) {
    const auto t = make(10);
    std::string e = error_of([&] { t.encode("1 2 x7 3"); });
    EXPECT_NE(e.find("'x7' (piece 2 of the text)"), std::string::npos) << e;
    e = error_of([&] { t.encode("1  2"); });
    EXPECT_NE(e.find("'' (piece 1 of the text)"), std::string::npos) << e;
    e = error_of([&] { t.encode("2147483648"); });
    EXPECT_NE(e.find("does not fit in int32"), std::string::npos) << e;
    e = error_of([&] { t.encode("1\t2"); });
    EXPECT_NE(e.find("'1\\x092'"), std::string::npos) << e;

    TokenizerOptions none;
    EXPECT_NE(error_of([&] { NullTokenizer{none}; }).find("--vocab-size"), std::string::npos);
}

TEST(NullTokenizer, EncodeAppendAndDecode) {
    const auto t = make(100);
    Ids out{9};
    t.encode_append("1 2 +3 -4 0_5", out);
    EXPECT_EQ(out, (Ids{9, 1, 2, 3, -4, 5}));
    EXPECT_EQ(t.decode(Ids{}), "");
    EXPECT_EQ(t.decode(Ids{-1, 0, 2147483647}), "-1 0 2147483647");
}

TEST(PythonInt, Limits) {
    EXPECT_EQ(parse_python_int("2147483647").value, 2147483647);
    EXPECT_EQ(parse_python_int("-2147483648").value, INT32_MIN);
    EXPECT_EQ(parse_python_int("-2147483649").status, IntParse::kOutOfRange);
    EXPECT_EQ(parse_python_int("99999999999999999999999").status, IntParse::kOutOfRange);
    EXPECT_EQ(parse_python_int("99999999999999999999999x").status, IntParse::kInvalid);
    EXPECT_EQ(parse_python_int("0000000000000000000001").value, 1);
    EXPECT_EQ(parse_python_int("\xff").status, IntParse::kInvalid);
}

TEST(NullTokenizer, Registered) {
    Registry registry;
    register_null(registry);
    TokenizerOptions o;
    o.vocab_size = 7;
    auto t = registry.create_tokenizer("NullTokenizer", o);
    EXPECT_EQ(t->encode("6 5"), (Ids{6, 5}));
    EXPECT_EQ(t->eod(), 7);
}

// core_v0.19's NullTokenizer (tests/fixtures/core_v0_19_tokenizers): a vocabulary of
// --vocab-size with eod --vocab-size - 1, or --null-tokenizer-eod-id / --null-tokenizer-pad-id.
TEST(NullTokenizer, CoreV019AsMegatron) {
    mt::test::CoreV019Reference ref;
    const size_t n = mt::test::for_each_core_v0_19_config(
        ref, "NullTokenizer", [](simdjson::dom::element config, const TokenizerOptions& o) {
            NullTokenizer tok(o);
            mt::test::expect_core_v0_19_config(tok, config, o);
        });
    EXPECT_EQ(n, 2u);
}

}  // namespace
}  // namespace mt::plugins::null
