// The regex dialect of tokenizers' split patterns (tiktoken's Rust regex / fancy-regex, Hugging
// Face tokenizers' Oniguruma) rewritten for PCRE2, refusing by name what PCRE2 would match
// differently.
#pragma once

#include <string>
#include <string_view>

namespace mt::text::detail {

struct TranslatedPattern {
    std::string pcre2;  // for pcre2_compile with PCRE2_UTF | PCRE2_UCP
    // The pattern names characters outside ASCII itself (a literal, \x{..}, \u..): Unicode
    // stand-ins could then change what it matches.
    bool names_non_ascii = false;
};

// \s and \S become White_Space tests (PCRE2's \s also takes U+180E), \d and \D Nd tests, \v
// the vertical tab and \uXXXX / \u{X} / \UXXXXXXXX \x{X}; \p{..} may name general categories
// only, (?i) may cover ASCII literals only, and the only flag is i. mt::Error "<construct> is
// not supported" otherwise (\w, \b, anchors, backreferences, POSIX and nested classes, ...).
TranslatedPattern translate_pattern(std::string_view pattern);

}  // namespace mt::text::detail
