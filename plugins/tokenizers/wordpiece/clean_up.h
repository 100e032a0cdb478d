// transformers' clean_up_tokenization (Megatron's BERT detokenize runs a copy of it on the whole
// text) and tokenizers' WordPiece decoder clean-up (run on each token, with " do not" -> " don't"
// besides): spaces before punctuation and contractions removed.
#pragma once

#include <string>

namespace mt::plugins::wordpiece {

enum class CleanUp { kTransformers, kTokenizersWordPiece };

void clean_up_tokenization(std::string& text, CleanUp rules);

}  // namespace mt::plugins::wordpiece
