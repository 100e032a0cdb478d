// BasicTokenizer: the text-to-words half of Megatron's BERT tokenizer (bert_tokenization.py
// BasicTokenizer): clean text, space out CJK ideographs, split on whitespace, lower-case and
// strip accents (uncased only), split off punctuation. One pass; each word goes to a callback.
#pragma once

#include <string>
#include <string_view>

#include "char_class.h"

namespace mt::plugins::wordpiece {

class BasicTokenizer {
  public:
    // Buffers one encode call reuses from word to word.
    struct Scratch {
        std::string word;
        std::string folded;
        std::u16string utf16, lowered, decomposed;
    };

    // transformers_rules: as transformers' BertTokenizer (tokenizers' BertNormalizer) rather
    // than Megatron's: private-use characters dropped too, and lower-casing without the
    // Final_Sigma context.
    explicit BasicTokenizer(bool lower_case, bool transformers_rules = false)
        : lower_case_(lower_case),
          final_sigma_(!transformers_rules),
          drop_(transformers_rules ? uint8_t(kDrop | kOtherControl) : uint8_t(kDrop)),
          flags_(bmp_char_flags()) {}

    // Calls on_word(std::string_view) for each token BasicTokenizer.tokenize(text) returns, in
    // order. Ill-formed UTF-8 bytes are skipped, as Megatron's convert_to_unicode does.
    template <class OnWord>
    void tokenize(std::string_view text, Scratch& s, OnWord&& on_word) const;

    // Megatron's per-word `token.lower()` then `_run_strip_accents` (NFD, drop Mn), appended to
    // `out`; final_sigma: lower-case a capital sigma at a word's end to ς, as str.lower() does.
    // `word` is well-formed UTF-8.
    static void lower_strip_accents(std::string_view word, Scratch& s, std::string& out,
                                    bool final_sigma = true);

    // Megatron's _run_split_on_punc: calls on_piece for the runs between punctuation and for
    // each punctuation character. `word` is well-formed UTF-8.
    template <class OnPiece>
    void split_on_punctuation(std::string_view word, OnPiece&& on_piece) const;

    bool lower_case() const { return lower_case_; }

  private:
    // Handles the word starting at text[i] (skipping dropped characters, with non-ASCII and
    // CJK characters); returns where the next word search starts.
    template <class OnWord>
    size_t general_word(std::string_view text, size_t i, Scratch& s, OnWord&& on_word) const;
    // The word after lower-casing and accent stripping (uncased) or as it is (cased).
    std::string_view fold(Scratch& s, bool ascii_or_inert) const;

    bool lower_case_;
    bool final_sigma_;
    uint8_t drop_;  // the flags of characters the clean-up removes
    const uint8_t* flags_;
};

template <class OnPiece>
void BasicTokenizer::split_on_punctuation(std::string_view word, OnPiece&& on_piece) const {
    size_t start = 0;
    size_t i = 0;
    while (i < word.size()) {
        const size_t begin = i;
        const char32_t cp = next_code_point(word, i);
        if (char_flags(flags_, cp) & kPunctuation) {
            if (begin > start) on_piece(word.substr(start, begin - start));
            on_piece(word.substr(begin, i - begin));
            start = i;
        }
    }
    if (start < word.size()) on_piece(word.substr(start));
}

template <class OnWord>
size_t BasicTokenizer::general_word(std::string_view text, size_t i, Scratch& s,
                                    OnWord&& on_word) const {
    // `simple`: every code point of the word is ASCII or unchanged by lower-casing and NFD, so
    // folding is an ASCII lower-case in place.
    bool simple = true;
    s.word.clear();
    auto flush = [&] {
        if (s.word.empty()) return;
        split_on_punctuation(fold(s, simple), on_word);
        s.word.clear();
        simple = true;
    };
    const uint8_t* flags = flags_;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            ++i;
            const uint8_t f = flags[byte];
            if (f & drop_) continue;
            if (f & kSeparator) break;
            s.word.push_back(static_cast<char>(byte));
            continue;
        }
        const size_t begin = i;
        const char32_t cp = next_code_point(text, i);
        if (cp == kInvalidCodePoint) continue;
        const uint8_t f = char_flags(flags, cp);
        if (f & drop_) continue;
        if (f & kSeparator) break;
        if (f & kCjk) {
            // _tokenize_chinese_chars puts spaces around it: a word of its own.
            flush();
            s.word.append(text.data() + begin, i - begin);
            simple = (f & kLowerInert) != 0;
            break;
        }
        if (!(f & kLowerInert)) simple = false;
        s.word.append(text.data() + begin, i - begin);
    }
    flush();
    return i;
}

template <class OnWord>
void BasicTokenizer::tokenize(std::string_view text, Scratch& s, OnWord&& on_word) const {
    const uint8_t* flags = flags_;
    const char* p = text.data();
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        // Fast path: a word of ASCII characters, none dropped, ending at an ASCII separator or
        // the end of the text, is a slice of the text (lower-cased in a copy if needed).
        const size_t start = i;
        bool upper = false;
        for (; i < n; ++i) {
            const auto b = static_cast<unsigned char>(p[i]);
            if (b >= 0x80 || (flags[b] & (kSeparator | drop_))) break;
            upper |= static_cast<unsigned>(b - 'A') < 26u;
        }
        if (i < n && (static_cast<unsigned char>(p[i]) >= 0x80 ||
                      !(flags[static_cast<unsigned char>(p[i])] & kSeparator))) {
            // Anything else: the general path redoes the word from its start.
            i = general_word(text, start, s, on_word);
            continue;
        }
        if (i > start) {
            std::string_view word(p + start, i - start);
            if (lower_case_ && upper) {
                s.word.assign(word);
                for (char& c : s.word)
                    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
                word = s.word;
            }
            split_on_punctuation(word, on_word);
        }
        if (i < n) ++i;  // the separator
    }
}

}  // namespace mt::plugins::wordpiece
