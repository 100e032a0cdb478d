#include "unicode_stand_ins.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "mt/error.h"
#include "mt/text/utf8.h"

namespace mt::text::detail {

namespace {

struct StandInRange {
    uint32_t first, last, stand_in;
};

#include "unicode_stand_ins.inc"

std::string pcre2_unicode_version() {
    char version[64] = {};
    pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
    return version;
}

}  // namespace

const UnicodeStandIns& UnicodeStandIns::for_linked_pcre2() {
    static const UnicodeStandIns stand_ins = [] {
        const std::string version = pcre2_unicode_version();
        MT_CHECK(version == kPcre2Unicode || version == kReferenceUnicode, "PCRE2 knows Unicode ",
                 version,
                 "; megatron.cpp classes characters as tiktoken and tokenizers do (Unicode ",
                 kReferenceUnicode, ") with PCRE2's Unicode ", kPcre2Unicode, " or ",
                 kReferenceUnicode, " only (core/src/text/gen_unicode_stand_ins.py)");
        return UnicodeStandIns(version == kPcre2Unicode);
    }();
    return stand_ins;
}

UnicodeStandIns::UnicodeStandIns(bool needed) {
    if (!needed) return;
    block_.assign(0x110000 >> 8, false);
    for (const StandInRange& r : kStandIns) {
        ranges_.push_back({r.first, r.last, r.stand_in});
        for (uint32_t b = r.first >> 8; b <= r.last >> 8; ++b) block_[b] = true;
    }
}

uint32_t UnicodeStandIns::stand_in(uint32_t cp) const {
    if (!block_[cp >> 8]) return 0;
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp,
                               [](uint32_t c, const Range& r) { return c < r.first; });
    if (it == ranges_.begin() || (--it)->last < cp) return 0;
    return it->stand_in;
}

size_t UnicodeStandIns::first_needing(std::string_view text) const {
    if (empty()) return std::string_view::npos;
    return find_non_ascii(text, [&](uint32_t cp, size_t len) { return len && stand_in(cp); });
}

uint32_t UnicodeStandIns::code_point_at(std::string_view text, size_t at) {
    const auto* p = reinterpret_cast<const uint8_t*>(text.data());
    uint32_t cp = 0;
    decode_utf8(p + at, p + text.size(), cp);
    return cp;
}

void UnicodeStandIns::replace(std::string& text, size_t from) const {
    for (size_t at = from;;) {
        const size_t hit = first_needing(std::string_view(text).substr(at));
        if (hit == std::string_view::npos) return;
        at += hit;
        const uint32_t cp = code_point_at(text, at);
        std::string original, stand_in_bytes;
        append_utf8(original, cp);
        append_utf8(stand_in_bytes, stand_in(cp));
        MT_CHECK(stand_in_bytes.size() == original.size(), "the stand-in of U+", std::hex, cp,
                 " has another length");
        text.replace(at, original.size(), stand_in_bytes);
        at += original.size();
    }
}

}  // namespace mt::text::detail
