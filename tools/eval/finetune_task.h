// What sets Megatron's finetuning tasks apart (tasks/race/finetune.py, tasks/glue/finetune.py):
// RACE is a 4-way multiple choice over directories of JSON lines, MNLI and QQP classify
// sentence pairs of GLUE TSV files into 3 and 2 classes; each names its validation sets after
// their paths.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "classification_example.h"
#include "mt/model.h"
#include "mt/tokenizer.h"

namespace mt::eval {

struct FinetuneTask {
    std::string name;              // RACE, MNLI or QQP
    bool multiple_choice = false;  // RACE: one row per choice, one logit per row
    int64_t num_classes = 2;       // MNLI 3, QQP 2; RACE's choices, 4
    // Sequences per example (RaceDataset.sample_multiplier: its 4 choices), else 1.
    int64_t sample_multiplier = 1;
};

// RACE, MNLI or QQP; mt::Error for any other name.
FinetuneTask finetune_task(const std::string& name);

// The model arguments that make the family build the task's model: task-head = multichoice, or
// classification with num-classes.
ModelArgs task_head_args(const FinetuneTask& task);

// Megatron's name of a validation dataset: the path after its last occurrence of the task's
// name, then RACE: '/' stripped from both ends and '/' -> '-'; MNLI, QQP: the characters
// ".tsv" stripped from both ends (Python's str.strip(chars)), then '/', and '_' -> '-'.
std::string validation_set_name(const FinetuneTask& task, const std::string& path);

// The examples of `paths` as the task's Dataset reads them, without its lines.
std::vector<ClassificationExample> read_task_examples(const FinetuneTask& task,
                                                      const std::vector<std::string>& paths,
                                                      const Tokenizer& tokenizer,
                                                      int64_t seq_length);
// The examples of `paths` as the task's Dataset(name, paths, ...) reads them (RACE: each path a
// directory; MNLI, QQP: each a TSV file), after Megatron's lines " > building <task> dataset for
// <name>:", "  > paths: ..." (`print` gets each line; the total follows the reading).
std::vector<ClassificationExample> task_examples(
    const FinetuneTask& task, const std::string& name, const std::vector<std::string>& paths,
    const Tokenizer& tokenizer, int64_t seq_length,
    const std::function<void(const std::string&)>& print);
// task_examples' lines for a dataset of `count` examples already read from `paths` (a dataset
// Megatron builds twice, as the validation set and again per path for the accuracy callback).
void print_task_dataset(const FinetuneTask& task, const std::string& name,
                        const std::vector<std::string>& paths, size_t count,
                        const std::function<void(const std::string&)>& print);

}  // namespace mt::eval
