// WordPieceModel: the word-to-ids half of Megatron's BERT tokenizer (bert_tokenization.py
// WordpieceTokenizer): greedy longest-match-first pieces, "##" marking a continuation, and
// [UNK] for a word that cannot be covered or is longer than its limit (200 code points, as
// Megatron).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "token_table.h"

namespace mt::plugins::wordpiece {

class WordPieceModel {
  public:
    // Megatron's WordpieceTokenizer default; Hugging Face's is 100.
    static constexpr size_t kMaxInputCharsPerWord = 200;

    // `vocab`: the whole vocabulary (token -> id); `unk_id`: the id of [UNK]; a word longer
    // than `max_chars` code points is [UNK].
    WordPieceModel(const TokenTable& vocab, int32_t unk_id,
                   size_t max_chars = kMaxInputCharsPerWord);

    // Appends the ids of one BasicTokenizer word (well-formed UTF-8, no whitespace) to `out`.
    // `bounds` is scratch space for code point offsets.
    void encode_word(std::string_view word, std::vector<int32_t>& out,
                     std::vector<uint32_t>& bounds) const;

  private:
    // Longest-match-first over a word of `chars` code points; offset(k) is the byte offset of
    // code point k (offset(chars) == word.size()).
    template <class Offset>
    void greedy(std::string_view word, size_t chars, Offset offset,
                std::vector<int32_t>& out) const;

    TokenTable whole_;         // pieces that start a word: every token
    TokenTable continuation_;  // tokens "##x", keyed by "x"
    int32_t unk_id_;
    size_t max_chars_;
};

}  // namespace mt::plugins::wordpiece
