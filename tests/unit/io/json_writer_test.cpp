// JsonWriter writes what Python's json.dumps writes: separators, nesting, ensure_ascii escapes
// (surrogate pairs above U+FFFF, U+FFFD for invalid UTF-8), float reprs and non-finite names.
// The expected strings are json.dumps outputs (Python 3.11).
#include <gtest/gtest.h>

#include <cmath>

#include "mt/io/json_writer.h"

namespace mt::io {
namespace {

TEST(JsonWriter, NestedContainersWithPythonSeparators) {
    JsonWriter w;
    w.begin_object().key("text").begin_array().value("a").value("b").end_array();
    w.key("n").value(3).key("ok").value(true).key("none").null();
    w.key("empty").begin_array().end_array().key("o").begin_object().end_object().end_object();
    // json.dumps({"text": ["a", "b"], "n": 3, "ok": True, "none": None, "empty": [], "o": {}})
    EXPECT_EQ(w.str(),
              R"({"text": ["a", "b"], "n": 3, "ok": true, "none": null, "empty": [], "o": {}})");
}

TEST(JsonWriter, StringsEscapedWithEnsureAscii) {
    // json.dumps("q\"\\\n\t\x01 é€😀")
    EXPECT_EQ(json_quote("q\"\\\n\t\x01 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
              R"("q\"\\\n\t\u0001 \u00e9\u20ac\ud83d\ude00")");
    // b"a\xff b".decode("utf-8", "replace") dumped
    EXPECT_EQ(json_quote("a\xff b"), R"("a\ufffd b")");
    EXPECT_EQ(json_quote("\xe2\x82"), R"("\ufffd\ufffd")");  // truncated sequence
}

TEST(JsonWriter, FloatsAsPythonRepr) {
    auto one = [](double v) { return JsonWriter().value(v).str(); };
    EXPECT_EQ(one(1.0), "1.0");
    EXPECT_EQ(one(-0.5), "-0.5");
    EXPECT_EQ(one(0.1), "0.1");
    EXPECT_EQ(one(1e-5), "1e-05");
    EXPECT_EQ(one(1.5e16), "1.5e+16");
    EXPECT_EQ(one(123456.789), "123456.789");
    EXPECT_EQ(one(-2.3025850929940455), "-2.3025850929940455");
    EXPECT_EQ(one(NAN), "NaN");
    EXPECT_EQ(one(-INFINITY), "-Infinity");
}

}  // namespace
}  // namespace mt::io
