#include "mt/text/python_repr.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdio>

#include "mt/text/utf8.h"

namespace mt::text {

namespace {

// str.isprintable() of one character: not in Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs (but the space).
bool printable(uint32_t cp) {
    switch (u_charType(UChar32(cp))) {
        case U_CONTROL_CHAR:
        case U_FORMAT_CHAR:
        case U_SURROGATE:
        case U_PRIVATE_USE_CHAR:
        case U_UNASSIGNED:
        case U_LINE_SEPARATOR:
        case U_PARAGRAPH_SEPARATOR:
            return false;
        case U_SPACE_SEPARATOR:
            return cp == ' ';
        default:
            return true;
    }
}

std::string repr(const std::string& s) {
    const char quote =
        s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, quote);
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    const auto* end = p + s.size();
    while (p < end) {
        uint32_t cp = 0;
        const size_t len = std::max<size_t>(text::decode_utf8(p, end, cp), 1);
        char escaped[16] = {};
        if (cp == uint32_t(quote) || cp == '\\') {
            out += '\\';
            out += char(cp);
        } else if (cp == '\t' || cp == '\n' || cp == '\r') {
            out += cp == '\t' ? "\\t" : cp == '\n' ? "\\n" : "\\r";
        } else if (cp < 0x7F && cp >= ' ') {
            out += char(cp);
        } else if (cp >= 0x80 && printable(cp)) {
            out.append(reinterpret_cast<const char*>(p), len);
        } else {
            std::snprintf(escaped, sizeof escaped,
                          cp <= 0xFF     ? "\\x%02x"
                          : cp <= 0xFFFF ? "\\u%04x"
                                         : "\\U%08x",
                          cp);
            out += escaped;
        }
        p += len;
    }
    return out + quote;
}

}  // namespace

std::string python_repr(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + repr(items[i]);
    return out + "]";
}

}  // namespace mt::text
