// Megatron's zero-shot detokenizers (tasks/zeroshot_gpt/detokenizer.py): the rules that turn
// PTB / WikiText's tokenized text back into running text before GPT tokenization.
#pragma once

#include <functional>
#include <string>

namespace mt::eval {

using Detokenizer = std::function<std::string(std::string)>;

std::string ptb_detokenize(std::string text);
std::string wikitext_detokenize(std::string text);

// get_detokenizer(path): the first of "ptb", "wiki", "lambada" (identity) that the path
// contains. mt::Error when it contains none (Megatron would call None).
Detokenizer detokenizer_for_path(const std::string& path);

}  // namespace mt::eval
