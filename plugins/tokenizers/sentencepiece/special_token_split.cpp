#include "special_token_split.h"

namespace mt::plugins::sentencepiece {

SpecialTokenSplit::SpecialTokenSplit(std::vector<std::pair<std::string, int32_t>> tokens)
    : tokens_(std::move(tokens)) {}

void SpecialTokenSplit::split(std::string_view text,
                              const std::function<void(std::string_view)>& text_piece,
                              const std::function<void(int32_t)>& special) const {
    size_t at = 0;
    while (true) {
        // Byte offsets order matches as Python's code-point offsets do: a token (valid UTF-8)
        // never matches inside a character.
        size_t best = std::string_view::npos;
        const std::pair<std::string, int32_t>* found = nullptr;
        for (const auto& token : tokens_) {
            const size_t pos = text.find(token.first, at);
            if (pos < best) {
                best = pos;
                found = &token;
            }
        }
        if (!found) break;
        text_piece(text.substr(at, best - at));
        special(found->second);
        at = best + found->first.size();
    }
    text_piece(text.substr(at));
}

}  // namespace mt::plugins::sentencepiece
