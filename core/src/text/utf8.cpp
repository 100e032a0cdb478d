#include "mt/text/utf8.h"

#include <cstdio>

#include "mt/error.h"

namespace mt::text {

size_t first_invalid_utf8(std::string_view text) {
    return find_non_ascii(text, [](uint32_t, size_t len) { return len == 0; });
}

std::string invalid_utf8_message(std::string_view text, size_t at) {
    std::string bytes;
    for (size_t i = at; i < text.size() && i < at + 4; ++i) {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%02X", uint8_t(text[i]));
        bytes += (bytes.empty() ? "" : " ") + std::string(hex);
    }
    return str("text is not valid UTF-8 at byte ", at, " (bytes ", bytes, ")");
}

void check_utf8(std::string_view text, std::string_view who) {
    const size_t at = first_invalid_utf8(text);
    MT_CHECK(at == std::string_view::npos, who, ": ", invalid_utf8_message(text, at));
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

void append_replacing_invalid(std::string& out, std::string_view bytes) {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
    const size_t n = bytes.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t b = s[i];
        if (b < 0x80) {
            out += char(b);
            ++i;
            continue;
        }
        // Continuation bytes a lead byte needs, and the allowed range of the first of them
        // (narrower after E0, ED, F0, F4: no overlongs, surrogates or values past U+10FFFF).
        size_t need = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        }
        size_t j = i + 1;
        size_t got = 0;
        while (got < need && j < n && s[j] >= lo && s[j] <= hi) {
            ++j;
            ++got;
            lo = 0x80;
            hi = 0xBF;
        }
        if (need > 0 && got == need)
            out.append(bytes.data() + i, j - i);
        else
            out += kReplacement;  // the lead byte and the valid continuations seen so far
        i = j;
    }
}

}  // namespace mt::text
