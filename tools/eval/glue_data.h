// MNLI and QQP examples as Megatron's tasks/glue/{mnli,qqp,data}.py build them from GLUE TSV
// files: the sentence pair of each row as "[CLS] a [SEP] b [SEP]", its label and its id.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "classification_example.h"
#include "mt/tokenizer.h"

namespace mt::eval {

enum class GlueTask { kMnli, kQqp };

// 3 for MNLI (contradiction 0, entailment 1, neutral 2), 2 for QQP.
int glue_num_classes(GlueTask task);

// One row of a GLUE file before tokenization (Megatron's raw sample).
struct GlueSample {
    int64_t uid = 0;
    std::string text_a, text_b;  // after clean_text
    int32_t label = 0;
};

// The samples of one TSV file, read as Megatron's process_samples_from_single_path: each line
// stripped (Python whitespace) and split at tabs; the first line is the header and says
// whether the file is a test file (no labels: every label is MNLI's 'contradiction' or QQP's 0).
//  MNLI: id column 0, sentences 8 and 9, gold label last; a 10-column header marks a test file.
//  QQP: id 0, questions 3 and 4, is_duplicate 5 (6 columns); a 3-column header marks a test file
//       (id 0, questions 1 and 2); in a labelled file a row without 6 columns, or with an empty
//       question, is skipped, as Megatron does (it prints a warning).
// mt::Error naming the file and line where Megatron fails (a missing column, a bad id or label,
// an empty MNLI sentence).
std::vector<GlueSample> glue_samples(GlueTask task, const std::filesystem::path& file);

// The examples of `files` in order: build_tokens_types_paddings_from_text(text_a, text_b) of
// each sample (one row), with its label and uid.
std::vector<ClassificationExample> glue_dataset(GlueTask task,
                                                const std::vector<std::filesystem::path>& files,
                                                const Tokenizer& tokenizer, int64_t max_seq_length);

}  // namespace mt::eval
