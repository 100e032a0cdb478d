// The data of the two zero-shot tasks as Megatron's tasks/zeroshot_gpt/datasets.py builds it:
// WIKITEXT103's token stream with its word count, LAMBADA's examples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lambada_examples.h"
#include "mt/tokenizer.h"

namespace mt::eval {

struct WikitextData {
    std::vector<int32_t> tokens;      // the detokenized text, tokenized whole
    int64_t num_original_tokens = 0;  // len(text.strip().split(" ")) of the raw text
};
// Reads `path`, counts its words, detokenizes by the rules its name selects, tokenizes.
WikitextData wikitext103_data(const std::string& path, const Tokenizer& tokenizer);

// One example per JSON line; mt::Error naming the line of an example that gives no label.
std::vector<LambadaExample> lambada_data(const std::string& path, const Tokenizer& tokenizer,
                                         bool strict);
// Their sequences for --seq-length `length` (lambada_sequence); mt::Error naming the line of
// path of an example that is too long.
std::vector<ScoredSequence> lambada_sequences(const std::vector<LambadaExample>& examples,
                                              int64_t length, int32_t pad_id,
                                              const std::string& path);

}  // namespace mt::eval
