// UTF-8 for the tokenizers: strict decoding of one character (what Python accepts as str),
// validation with a message naming the bad bytes, and bytes -> text with U+FFFD for bad
// sequences as Python's errors='replace' does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mt/api.h"

namespace mt::text {

// Decodes the character at p (p < end) into cp and returns its length in bytes, or 0 when the
// bytes there are not well-formed UTF-8 (overlong forms, surrogates, > U+10FFFF, truncation).
inline size_t decode_utf8(const uint8_t* p, const uint8_t* end, uint32_t& cp) {
    const uint8_t b0 = p[0];
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    const size_t avail = size_t(end - p);
    auto cont = [](uint8_t b) { return (b & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (avail < 2 || !cont(p[1])) return 0;
        cp = (uint32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (avail < 3 || !cont(p[1]) || !cont(p[2])) return 0;
        cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (avail < 4 || !cont(p[1]) || !cont(p[2]) || !cont(p[3])) return 0;
        cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
             (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF) return 0;
        return 4;
    }
    return 0;
}

// The offset of the first character outside ASCII for which pred(cp, length) holds (length 0:
// bytes that do not start a well-formed character, then passed one by one), or npos.
template <class Pred>
size_t find_non_ascii(std::string_view text, Pred pred) {
    const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
    const auto* end = begin + text.size();
    for (const uint8_t* p = begin; p < end;) {
        if (*p < 0x80) {
            ++p;
            continue;
        }
        uint32_t cp = 0;
        const size_t len = decode_utf8(p, end, cp);
        if (pred(cp, len)) return size_t(p - begin);
        p += len ? len : 1;
    }
    return std::string_view::npos;
}

// Whether a byte continues a character (10xxxxxx) rather than starting one.
inline bool is_utf8_continuation(char byte) {
    return (static_cast<uint8_t>(byte) & 0xC0) == 0x80;
}

// The longest start of `text` of at most `max_bytes` that does not end inside a character, for
// quoting a bounded part of a value in a message.
inline std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    size_t cut = max_bytes;
    while (cut > 0 && is_utf8_continuation(text[cut])) --cut;
    return text.substr(0, cut);
}

// The offset of the first byte that does not start a well-formed character, or npos.
MT_API size_t first_invalid_utf8(std::string_view text);
// "text is not valid UTF-8 at byte N (bytes XX YY ..)" for the bad bytes at `at`.
MT_API std::string invalid_utf8_message(std::string_view text, size_t at);
// An mt::Error "<who>: <invalid_utf8_message>" unless `text` is valid UTF-8.
MT_API void check_utf8(std::string_view text, std::string_view who);

// Appends the UTF-8 encoding of cp (any value up to 0x10FFFF, surrogates included: JSON's
// lone "\udXXX" escapes become the 3-byte form Python would hold as a lone surrogate).
MT_API void append_utf8(std::string& out, uint32_t cp);

// bytes.decode('utf-8', errors='replace'): each maximal ill-formed subpart becomes one U+FFFD.
MT_API void append_replacing_invalid(std::string& out, std::string_view bytes);

}  // namespace mt::text
