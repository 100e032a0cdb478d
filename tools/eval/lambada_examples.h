// LAMBADA examples as Megatron's _LambadaDataset builds them: a context and the tokens of the
// last word to predict (the last token, or with --strict-lambada the whole last word).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "mt/tokenizer.h"
#include "scoring.h"

namespace mt::eval {

struct LambadaExample {
    std::vector<int32_t> context;
    std::vector<int32_t> label;
};

// Non-strict: tokenize(text), the last id is the label. Strict: the last whitespace-separated
// word w, context tokenize(text[:text.rfind(w)].strip()), label tokenize(" " + w).
// mt::Error when the text gives no token or no word.
LambadaExample lambada_example(std::string_view text, const Tokenizer& tokenizer, bool strict);

// The sequence the model reads: context + label (at most `length` + 1 tokens, else mt::Error),
// padded with `pad_id` to length + 1; scored are the positions that predict a label token
// (_LambadaDataset's pad_mask[1:], so a label token at position 0 is never scored).
ScoredSequence lambada_sequence(const LambadaExample& example, int64_t length, int32_t pad_id);

}  // namespace mt::eval
