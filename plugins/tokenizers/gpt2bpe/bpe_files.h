// Readers of the two GPT-2 BPE files, vocab.json (token -> id) and merges.txt (ranked pairs),
// accepting what Megatron-LM's gpt2_tokenization.py accepts and reading it the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt::plugins::gpt2bpe {

struct VocabEntry {
    std::string token;  // UTF-8
    int32_t id;
};

struct MergeRule {
    std::string left, right;  // a merge's rank is its index in the list
};

// vocab.json: one JSON object of string -> non-negative integer, as json.load reads it (a
// repeated key keeps its last id). Entries are returned in file order, repeats included.
// Errors name the file, line and column.
std::vector<VocabEntry> read_vocab_json(const std::string& path);
std::vector<VocabEntry> parse_vocab_json(std::string_view text, const std::string& path);

// merges.txt as Megatron reads it: text.split('\n')[1:-1] after universal-newline decoding.
// So the first line (the "#version" header) is always skipped, and so is the last line when
// the file does not end with a newline (Megatron loses that merge; we do too, with a warning).
// Blank lines are skipped; a line that is not two whitespace-separated tokens is an error.
std::vector<MergeRule> read_merges_txt(const std::string& path);
std::vector<MergeRule> parse_merges_txt(std::string_view text, const std::string& path);

}  // namespace mt::plugins::gpt2bpe
