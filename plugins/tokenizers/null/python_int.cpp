#include "python_int.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

namespace mt::plugins::null {
namespace {

// One code point of the piece as CPython's int() sees it after
// _PyUnicode_TransformDecimalAndSpaceToASCII: ASCII stays, other whitespace becomes ' ',
// other decimal digits become '0'-'9', anything else makes the literal invalid ('?').
char ascii_view(UChar32 cp) {
    if (cp >= 0 && cp < 127) return static_cast<char>(cp);
    if (cp < 0) return '?';
    if (u_charType(cp) == U_SPACE_SEPARATOR) return ' ';
    const UCharDirection d = u_charDirection(cp);
    if (d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR)
        return ' ';
    const int32_t digit = u_charDigitValue(cp);
    return digit >= 0 && digit <= 9 ? static_cast<char>('0' + digit) : '?';
}

// Py_ISSPACE: the ASCII whitespace PyLong_FromString skips.
bool ascii_space(int c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

}  // namespace

ParsedInt parse_python_int(std::string_view piece) {
    const auto* s = reinterpret_cast<const uint8_t*>(piece.data());
    const auto n = static_cast<int32_t>(piece.size());
    int32_t i = 0;
    constexpr int kEnd = -1;
    auto next = [&]() -> int {
        if (i >= n) return kEnd;
        UChar32 cp;
        U8_NEXT(s, i, n, cp);
        return ascii_view(cp);
    };
    ParsedInt invalid;
    int c = next();
    while (ascii_space(c)) c = next();
    bool negative = false;
    if (c == '+' || c == '-') {
        negative = c == '-';
        c = next();
    }
    // Digits with single underscores between them; at least one digit.
    if (c < '0' || c > '9') return invalid;
    const int64_t limit = negative ? int64_t{1} << 31 : (int64_t{1} << 31) - 1;
    int64_t value = 0;
    bool too_large = false;
    bool after_underscore = false;
    for (;;) {
        if (c >= '0' && c <= '9') {
            value = value * 10 + (c - '0');
            if (value > limit) {
                too_large = true;
                value = limit;  // keep scanning: a bad suffix still makes it invalid
            }
            after_underscore = false;
        } else if (c == '_' && !after_underscore) {
            after_underscore = true;
        } else {
            break;
        }
        c = next();
    }
    if (after_underscore) return invalid;
    while (ascii_space(c)) c = next();
    if (c != kEnd) return invalid;
    if (too_large) return {IntParse::kOutOfRange, 0};
    return {IntParse::kOk, static_cast<int32_t>(negative ? -value : value)};
}

}  // namespace mt::plugins::null
