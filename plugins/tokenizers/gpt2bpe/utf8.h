// UTF-8 helpers of the GPT-2 tokenizer: strict decoding of one character (what Python accepts
// as str), and bytes -> text with U+FFFD for bad sequences as Python's errors='replace' does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mt::plugins::gpt2bpe {

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

// Appends the UTF-8 encoding of cp (any value up to 0x10FFFF, surrogates included: JSON's
// lone "\udXXX" escapes become the 3-byte form Python would hold as a lone surrogate).
void append_utf8(std::string& out, uint32_t cp);

// bytes.decode('utf-8', errors='replace'): each maximal ill-formed subpart becomes one U+FFFD.
void append_replacing_invalid(std::string& out, std::string_view bytes);

}  // namespace mt::plugins::gpt2bpe
