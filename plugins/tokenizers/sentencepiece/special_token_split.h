// The text between and at special tokens, as Megatron's _SentencePieceTokenizer.tokenize (from
// NeMo) finds them: again and again the earliest occurrence of any special token, the first
// listed winning a tie; the pieces between go to SentencePiece.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mt::plugins::sentencepiece {

class SpecialTokenSplit {
  public:
    // (token text, id) in Megatron's insertion order.
    explicit SpecialTokenSplit(std::vector<std::pair<std::string, int32_t>> tokens);

    // Calls `text_piece` for each stretch of plain text (possibly empty, as Megatron encodes
    // it) and `special` for each special token's id, in order.
    void split(std::string_view text, const std::function<void(std::string_view)>& text_piece,
               const std::function<void(int32_t)>& special) const;

  private:
    std::vector<std::pair<std::string, int32_t>> tokens_;
};

}  // namespace mt::plugins::sentencepiece
