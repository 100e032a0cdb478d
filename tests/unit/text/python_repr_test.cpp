// Python's repr() of a list of str (how Megatron's unique_identifiers record a list option).
#include "mt/text/python_repr.h"

#include <gtest/gtest.h>

namespace mt::text {
namespace {

TEST(PythonRepr, QuotesAndEscapesAsCPython) {
    EXPECT_EQ(python_repr({}), "[]");
    EXPECT_EQ(python_repr({"a\\b", "\n\r", "\x7f", "\xC2\x85", "\xE2\x80\x8B", "\xF3\xA0\x80\x81",
                           "\xF0\x9F\x98\x80", " "}),
              R"(['a\\b', '\n\r', '\x7f', '\x85', '\u200b', '\U000e0001', '😀', ' '])");
}

}  // namespace
}  // namespace mt::text
