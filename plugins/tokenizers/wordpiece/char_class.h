// Character classes of Megatron's BERT BasicTokenizer (bert_tokenization.py) taken from ICU's
// Unicode data, plus the UTF-8 decoding and encoding that the tokenizer's loops share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <unicode/unorm2.h>

namespace mt::plugins::wordpiece {

enum CharFlag : uint8_t {
    // Removed by _clean_text: U+0000, U+FFFD and categories Cc/Cf other than \t \n \r.
    kDrop = 1,
    // Ends a word: _is_whitespace (\t \n \r space, Zs), which _clean_text maps to ' ', and the
    // characters Python's str.split() also splits on (U+2028, U+2029).
    kSeparator = 2,
    // _is_chinese_char: surrounded by spaces, so it is always a word of its own.
    kCjk = 4,
    // _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or category P*.
    kPunctuation = 8,
    // Left unchanged by str.lower(), NFD and the removal of Mn marks, whatever surrounds it,
    // so the uncased path can copy it without ICU.
    kLowerInert = 16,
    // Category Co: transformers' BertNormalizer drops it too (its is_control is Rust's
    // unicode_categories is_other, which leaves unassigned code points in).
    kOtherControl = 32,
};

// Flags of code points below 0x10000, indexed by code point; built once from ICU.
const uint8_t* bmp_char_flags();
// Flags of any code point (the table for the BMP, ICU above it).
uint8_t char_flags_slow(char32_t cp);

inline uint8_t char_flags(const uint8_t* bmp, char32_t cp) {
    return cp < 0x10000 ? bmp[cp] : char_flags_slow(cp);
}

// Python's str.isspace(): category Zs or bidirectional class WS, B or S. str.strip() and
// str.split() use it.
bool is_python_space(char32_t cp);
// Python's str.strip(): `text` without leading and trailing is_python_space code points.
std::string_view python_strip(std::string_view text);
// ICU's NFD normalizer (process-wide, thread-safe).
const UNormalizer2* nfd_normalizer();
// Category Mn (removed by _run_strip_accents).
bool is_nonspacing_mark(char32_t cp);

inline constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

// Decodes the code point at s[i] and advances i past it. An ill-formed sequence (overlong,
// surrogate, out of range, truncated) yields kInvalidCodePoint and advances one byte, so a
// caller that skips it drops exactly the bytes Python's decode("utf-8", "ignore") drops.
inline char32_t next_code_point(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    const size_t left = s.size() - i;
    auto cont = [&](size_t k) { return (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; };
    auto low = [&](size_t k) { return static_cast<char32_t>(s[i + k] & 0x3F); };
    char32_t cp = kInvalidCodePoint;
    size_t len = 1;
    if (b0 >= 0xC2 && b0 <= 0xDF && left >= 2 && cont(1)) {
        cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | low(1);
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF && left >= 3 && cont(1) && cont(2)) {
        char32_t v = (static_cast<char32_t>(b0 & 0x0F) << 12) | (low(1) << 6) | low(2);
        if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) {
            cp = v;
            len = 3;
        }
    } else if (b0 >= 0xF0 && b0 <= 0xF4 && left >= 4 && cont(1) && cont(2) && cont(3)) {
        char32_t v =
            (static_cast<char32_t>(b0 & 0x07) << 18) | (low(1) << 12) | (low(2) << 6) | low(3);
        if (v >= 0x10000 && v <= 0x10FFFF) {
            cp = v;
            len = 4;
        }
    }
    i += len;
    return cp;
}

inline void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace mt::plugins::wordpiece
