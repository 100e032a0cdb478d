// The tokenizer of a Hugging Face folder written from a Megatron checkpoint: which files its
// args name (GPT2BPETokenizer's vocab/merge files, BertWordPiece*'s vocab.txt,
// HuggingFaceTokenizer's tokenizer.json folder, Llama2Tokenizer's and
// GPTSentencePieceTokenizer's tokenizer.model; a TikTokenizer's model written as a
// tokenizer.json), its vocabulary size and BOS/EOS ids, read through the tokenizer plugins.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/checkpoint.h"

namespace mt::plugins::hf {

struct HfTokenizerFiles {
    // Files to copy into the folder: (source, name in the folder).
    std::vector<std::pair<std::filesystem::path, std::string>> copies;
    // Files to write into the folder: (name, content).
    std::vector<std::pair<std::string, std::string>> written;
    // tokenizer_config.json to write when no copy brings one (GPT2Tokenizer's, BertTokenizer's);
    // empty: none.
    std::string tokenizer_config;
    std::optional<int64_t> vocab_size, bos_id, eos_id;  // from the tokenizer, when it loads
    // Why no tokenizer files are written, or why the tokenizer gave no ids; empty otherwise.
    std::string note;
};

// What the args' tokenizer_type and files give; files that are not there (the checkpoint moved)
// give none and say so in `note`. `max_positions` is GPT-2's model_max_length.
HfTokenizerFiles hf_tokenizer_files(const CheckpointArgs& args, int64_t max_positions);

// Copies and writes the files into `dir` (a temporary folder being filled).
void write_tokenizer_files(const HfTokenizerFiles& files, const std::filesystem::path& dir);

}  // namespace mt::plugins::hf
