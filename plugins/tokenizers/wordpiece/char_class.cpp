#include "char_class.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>

#include <array>

#include "mt/error.h"

namespace mt::plugins::wordpiece {
namespace {

bool is_cjk(char32_t cp) {
    // The ranges of _is_chinese_char, verbatim (CJK Unified Ideographs and extensions A-E,
    // compatibility ideographs and their supplement).
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_punctuation(char32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
        (cp >= 123 && cp <= 126))
        return true;
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_P_MASK) != 0;
}

uint8_t compute_flags(char32_t cp) {
    const auto c = static_cast<UChar32>(cp);
    const int8_t type = u_charType(c);
    const bool control =
        (type == U_CONTROL_CHAR || type == U_FORMAT_CHAR) && cp != '\t' && cp != '\n' && cp != '\r';
    if (cp == 0 || cp == 0xFFFD || control) return kDrop;
    uint8_t flags = 0;
    if (type == U_PRIVATE_USE_CHAR) flags |= kOtherControl;
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || is_python_space(cp))
        flags |= kSeparator;
    if (is_cjk(cp)) flags |= kCjk;
    if (is_punctuation(cp)) flags |= kPunctuation;
    if (type != U_NON_SPACING_MARK && !u_hasBinaryProperty(c, UCHAR_CHANGES_WHEN_LOWERCASED) &&
        unorm2_isInert(nfd_normalizer(), c))
        flags |= kLowerInert;
    return flags;
}

}  // namespace

const UNormalizer2* nfd_normalizer() {
    static const UNormalizer2* instance = [] {
        UErrorCode status = U_ZERO_ERROR;
        const UNormalizer2* n = unorm2_getNFDInstance(&status);
        MT_CHECK(U_SUCCESS(status), "ICU: cannot load the NFD normalizer: ", u_errorName(status));
        return n;
    }();
    return instance;
}

bool is_python_space(char32_t cp) {
    const auto c = static_cast<UChar32>(cp);
    if (u_charType(c) == U_SPACE_SEPARATOR) return true;
    const UCharDirection d = u_charDirection(c);
    return d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR;
}

std::string_view python_strip(std::string_view text) {
    size_t begin = 0;
    while (begin < text.size()) {
        size_t next = begin;
        if (!is_python_space(next_code_point(text, next))) break;
        begin = next;
    }
    size_t end = text.size();
    while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        if (!is_python_space(next_code_point(text, next))) break;
        end = start;
    }
    return text.substr(begin, end - begin);
}

bool is_nonspacing_mark(char32_t cp) {
    return u_charType(static_cast<UChar32>(cp)) == U_NON_SPACING_MARK;
}

const uint8_t* bmp_char_flags() {
    static const std::array<uint8_t, 0x10000> table = [] {
        std::array<uint8_t, 0x10000> t{};
        for (char32_t cp = 0; cp < 0x10000; ++cp) t[cp] = compute_flags(cp);
        return t;
    }();
    return table.data();
}

uint8_t char_flags_slow(char32_t cp) {
    return cp < 0x10000 ? bmp_char_flags()[cp] : compute_flags(cp);
}

}  // namespace mt::plugins::wordpiece
