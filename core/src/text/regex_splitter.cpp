#include "mt/text/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "mt/error.h"
#include "regex_translation.h"
#include "unicode_stand_ins.h"

namespace mt::text {

namespace {

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof buffer);
    return reinterpret_cast<const char*>(buffer);
}

// What each thread matches with: one match-data block (the whole match is all we read) and a
// JIT stack large enough for backtracking over long runs.
struct ThreadMatcher {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(64 << 10, 8 << 20, nullptr);
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    std::string copy;  // the text with Unicode stand-ins

    ThreadMatcher() {
        MT_CHECK(data && stack && context, "PCRE2: out of memory");
        pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~ThreadMatcher() {
        pcre2_match_context_free(context);
        pcre2_jit_stack_free(stack);
        pcre2_match_data_free(data);
    }
    static ThreadMatcher& get() {
        thread_local ThreadMatcher matcher;
        return matcher;
    }
};

}  // namespace

struct RegexSplitter::Compiled {
    std::string pattern;
    pcre2_code* code = nullptr;
    bool names_non_ascii = false;
    bool jit = false;
    const detail::UnicodeStandIns* stand_ins = nullptr;

    ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(std::string_view pattern) {
    auto compiled = std::make_shared<Compiled>();
    compiled->pattern = pattern;
    compiled->stand_ins = &detail::UnicodeStandIns::for_linked_pcre2();
    try {
        const detail::TranslatedPattern translated = detail::translate_pattern(pattern);
        compiled->names_non_ascii = translated.names_non_ascii;
        pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
        MT_CHECK(context, "PCRE2: out of memory");
        pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // '.' stops at \n only, as in Rust
        int error = 0;
        PCRE2_SIZE offset = 0;
        compiled->code = pcre2_compile(
            reinterpret_cast<PCRE2_SPTR>(translated.pcre2.data()), translated.pcre2.size(),
            PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &error, &offset, context);
        pcre2_compile_context_free(context);
        MT_CHECK(compiled->code, "PCRE2 cannot compile it (", pcre2_message(error), " at offset ",
                 offset, " of its PCRE2 form '", translated.pcre2, "')");
        uint32_t min_length = 0;
        pcre2_pattern_info(compiled->code, PCRE2_INFO_MINLENGTH, &min_length);
        MT_CHECK(min_length > 0, "a pattern that can match the empty string is not supported");
        // Without JIT (a CPU PCRE2 has no JIT for) pcre2_match interprets: slower, same matches.
        compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
    } catch (const Error& e) {
        MT_FAIL("regex '", pattern, "': ", e.what());
    }
    compiled_ = std::move(compiled);
}

void RegexSplitter::find_all(std::string_view text, std::vector<Match>& out) const {
    const Compiled& c = *compiled_;
    ThreadMatcher& m = ThreadMatcher::get();
    std::string_view subject = text;
    if (const size_t at = c.stand_ins->first_needing(text); at != std::string_view::npos) {
        MT_CHECK(!c.names_non_ascii, "regex '", c.pattern, "': text with U+", std::hex,
                 std::uppercase, detail::UnicodeStandIns::code_point_at(text, at), std::dec,
                 " (at byte ", at,
                 ", a character PCRE2's Unicode tables do not know) is not supported by a pattern "
                 "that names characters outside ASCII itself");
        m.copy.assign(text);
        c.stand_ins->replace(m.copy, at);
        subject = m.copy;
    }
    const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(m.data);
    // pcre2_jit_match skips pcre2_match's checks of its arguments, a noticeable share of a
    // match of a few bytes.
    auto* match = c.jit ? pcre2_jit_match : pcre2_match;
    for (size_t start = 0; start < subject.size();) {
        const int rc =
            match(c.code, bytes, subject.size(), start, PCRE2_NO_UTF_CHECK, m.data, m.context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        MT_CHECK(rc >= 0, "regex '", c.pattern, "': PCRE2 failed at byte ", start, ": ",
                 pcre2_message(rc));
        out.push_back({size_t(ovector[0]), size_t(ovector[1])});
        start = ovector[1];
    }
}

}  // namespace mt::text
