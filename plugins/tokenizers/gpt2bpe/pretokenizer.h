// GPT-2's pre-tokenisation, written as a scanner instead of a regex engine: splits UTF-8 text
// into the pieces re.findall(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
// ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+") yields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mt/text/utf8.h"
#include "unicode_classes.h"

namespace mt::plugins::gpt2bpe {

// Walks one text; every byte belongs to exactly one piece (each alternative of the regex can
// start at any character, so findall never skips). Throws mt::Error on invalid UTF-8.
class PieceScanner {
  public:
    PieceScanner(std::string_view text, const UnicodeClasses& classes)
        : begin_(reinterpret_cast<const uint8_t*>(text.data())),
          pos_(begin_),
          end_(begin_ + text.size()),
          classes_(classes),
          latin1_(classes.latin1()) {}

    // The next piece as [first, last), or false at the end of the text.
    bool next(const uint8_t*& first, const uint8_t*& last) {
        if (pos_ == end_) return false;
        first = pos_;
        pos_ = piece_end(pos_);
        last = pos_;
        return true;
    }

  private:
    struct Char {
        CharClass cls;
        uint32_t len;
    };

    Char char_at(const uint8_t* p) const {
        if (*p < 0x80) return {CharClass(latin1_[*p]), 1};
        return char_at_multibyte(p);
    }
    Char char_at_multibyte(const uint8_t* p) const {
        uint32_t cp = 0;
        const size_t len = text::decode_utf8(p, end_, cp);
        if (len == 0) throw_invalid(p);
        return {classes_.of(cp), uint32_t(len)};
    }
    [[noreturn]] void throw_invalid(const uint8_t* p) const;

    // End of the longest run of class `cls` starting at p.
    const uint8_t* run_end(const uint8_t* p, CharClass cls) const {
        while (p < end_) {
            if (*p < 0x80) {
                if (latin1_[*p] != cls) break;
                ++p;
            } else {
                const Char c = char_at_multibyte(p);
                if (c.cls != cls) break;
                p += c.len;
            }
        }
        return p;
    }

    // Length of "'s", "'t", "'m", "'d", "'re", "'ve" or "'ll" at p, or 0.
    size_t contraction(const uint8_t* p) const {
        const size_t avail = size_t(end_ - p);
        if (avail < 2) return 0;
        const uint8_t a = p[1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if (avail < 3) return 0;
        const uint8_t b = p[2];
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
        return 0;
    }

    const uint8_t* piece_end(const uint8_t* p) const {
        if (*p == '\'') {
            if (size_t n = contraction(p)) return p + n;
        }
        // " ?X+": a single literal space (U+0020 only) joins a following letter, number or
        // other run.
        if (*p == ' ' && p + 1 < end_) {
            const Char next = char_at(p + 1);
            if (next.cls != kSpace) return run_end(p + 1 + next.len, next.cls);
        }
        const Char c = char_at(p);
        if (c.cls != kSpace) return run_end(p + c.len, c.cls);
        // A whitespace run: "\s+(?!\S)" backtracks one character when the run is followed by
        // non-space, leaving its last character to start the next piece; a single whitespace
        // character before non-space is taken by the final "\s+".
        const uint8_t* last_start = p;
        const uint8_t* q = p + c.len;
        while (q < end_) {
            const Char w = char_at(q);
            if (w.cls != kSpace) break;
            last_start = q;
            q += w.len;
        }
        if (q == end_ || last_start == p) return q;
        return last_start;
    }

    const uint8_t* begin_;
    const uint8_t* pos_;
    const uint8_t* end_;
    const UnicodeClasses& classes_;
    const uint8_t* latin1_;
};

}  // namespace mt::plugins::gpt2bpe
