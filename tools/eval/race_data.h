// RACE examples as Megatron's tasks/race/data.py builds them: each question of each article
// with its 4 choices, one "[CLS] question+choice [SEP] article [SEP]" row per choice.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "classification_example.h"
#include "mt/tokenizer.h"

namespace mt::eval {

inline constexpr int kRaceChoices = 4;            // NUM_CHOICES
inline constexpr int64_t kRaceMaxQaLength = 128;  // MAX_QA_LENGTH

// The files Megatron reads from one RACE directory: glob.glob(dir + '/*.txt'), i.e. the
// entries named *.txt that do not start with '.', in the directory's own (readdir) order,
// which Python's glob does not sort. mt::Error when `dir` is not a directory (where Megatron's
// glob would silently find nothing).
std::vector<std::filesystem::path> race_files(const std::filesystem::path& dir);

// The examples of `files` read in that order as one Megatron datapath: every line a JSON object
// with "article", "questions", "options" (4 per question) and "answers" ("A".."D"). For each
// question and choice: qa = question with each '_' replaced by the choice, or question + ' ' +
// choice when it has none; clean_text; tokenize; keep the first max_qa_length ids; the row is
// build_tokens_types_paddings(qa, tokenize(clean_text(article))). Label = answer - 'A'; uid
// counts the questions from 0. Files are tokenized in parallel; mt::Error names the file and
// line of the first bad document.
std::vector<ClassificationExample> race_examples(const std::vector<std::filesystem::path>& files,
                                                 const Tokenizer& tokenizer, int64_t max_seq_length,
                                                 int64_t max_qa_length = kRaceMaxQaLength);

// RaceDataset over --train-data / --valid-data directories: race_examples(race_files(dir)) of
// each, concatenated (uids restart at 0 with each directory, as Megatron's do).
std::vector<ClassificationExample> race_dataset(const std::vector<std::filesystem::path>& dirs,
                                                const Tokenizer& tokenizer, int64_t max_seq_length);

}  // namespace mt::eval
