// A tokenizer's split regex (tiktoken's pat_str, a tokenizer.json Split pattern) run by PCRE2
// with JIT, finding the matches tiktoken's Rust regex and tokenizers' Oniguruma find.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "mt/api.h"

namespace mt::text {

class MT_API RegexSplitter {
  public:
    // `pattern` in the dialect tiktoken and tokenizers share. An mt::Error naming the construct
    // when PCRE2 could match differently (\w, \b, anchors, flags but i, properties other than
    // general categories, ...), when the pattern could match the empty string, or when it does
    // not compile.
    explicit RegexSplitter(std::string_view pattern);

    struct Match {
        size_t begin, end;  // byte offsets; never empty
    };
    // Appends the matches in `text` (valid UTF-8), leftmost first and non-overlapping, as
    // Python's finditer and Rust's find_iter give them. Characters are classed by Unicode
    // 16.0, as in tiktoken and tokenizers, although Debian 12's PCRE2 knows 14.0. Thread-safe.
    void find_all(std::string_view text, std::vector<Match>& out) const;

  private:
    struct Compiled;
    std::shared_ptr<const Compiled> compiled_;  // immutable: copies share it
};

}  // namespace mt::text
