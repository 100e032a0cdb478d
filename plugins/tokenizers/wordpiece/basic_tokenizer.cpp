#include "basic_tokenizer.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include "mt/error.h"

namespace mt::plugins::wordpiece {
namespace {

// Runs an ICU string transform `fn(dest, capacity, status) -> length` into `out`, growing
// `out` once if ICU reports the buffer too small.
template <class Fn>
void run_icu(std::u16string& out, size_t guess, const char* what, Fn&& fn) {
    if (out.size() < guess) out.resize(guess);
    UErrorCode status = U_ZERO_ERROR;
    int32_t length =
        fn(reinterpret_cast<UChar*>(out.data()), static_cast<int32_t>(out.size()), &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
        out.resize(static_cast<size_t>(length));
        status = U_ZERO_ERROR;
        length =
            fn(reinterpret_cast<UChar*>(out.data()), static_cast<int32_t>(out.size()), &status);
    }
    MT_CHECK(U_SUCCESS(status), "ICU ", what, " failed: ", u_errorName(status));
    out.resize(static_cast<size_t>(length));
}

}  // namespace

void BasicTokenizer::lower_strip_accents(std::string_view word, Scratch& s, std::string& out,
                                         bool final_sigma) {
    s.utf16.clear();
    for (size_t i = 0; i < word.size();) {
        char32_t cp = next_code_point(word, i);
        if (cp == 0x03A3 && !final_sigma) cp = 0x03C3;  // σ wherever Σ stands
        if (cp < 0x10000) {
            s.utf16.push_back(static_cast<char16_t>(cp));
        } else {
            s.utf16.push_back(static_cast<char16_t>(U16_LEAD(cp)));
            s.utf16.push_back(static_cast<char16_t>(U16_TRAIL(cp)));
        }
    }
    const auto* src = reinterpret_cast<const UChar*>(s.utf16.data());
    const auto src_len = static_cast<int32_t>(s.utf16.size());
    // str.lower(): full case mapping with the Final_Sigma context, no language tailoring,
    // which is ICU's root locale ("").
    run_icu(s.lowered, s.utf16.size() + 8, "lower-casing",
            [&](UChar* dest, int32_t cap, UErrorCode* status) {
                return u_strToLower(dest, cap, src, src_len, "", status);
            });
    const UNormalizer2* nfd = nfd_normalizer();
    run_icu(s.decomposed, s.lowered.size() * 2 + 8, "NFD normalization",
            [&](UChar* dest, int32_t cap, UErrorCode* status) {
                return unorm2_normalize(nfd, reinterpret_cast<const UChar*>(s.lowered.data()),
                                        static_cast<int32_t>(s.lowered.size()), dest, cap, status);
            });
    const auto* d = reinterpret_cast<const UChar*>(s.decomposed.data());
    const auto n = static_cast<int32_t>(s.decomposed.size());
    for (int32_t i = 0; i < n;) {
        UChar32 cp;
        U16_NEXT(d, i, n, cp);
        if (!is_nonspacing_mark(static_cast<char32_t>(cp)))
            append_utf8(out, static_cast<char32_t>(cp));
    }
}

std::string_view BasicTokenizer::fold(Scratch& s, bool ascii_or_inert) const {
    if (!lower_case_) return s.word;
    if (ascii_or_inert) {
        // Non-ASCII bytes belong to code points that folding leaves alone.
        for (char& c : s.word)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
        return s.word;
    }
    s.folded.clear();
    lower_strip_accents(s.word, s, s.folded, final_sigma_);
    return s.folded;
}

}  // namespace mt::plugins::wordpiece
