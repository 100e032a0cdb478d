// megatron-eval's finetuning tasks (RACE, MNLI, QQP) as Megatron-LM's tasks/main.py runs them
// (tasks/finetune_utils.py finetune, tasks/eval_utils.py accuracy_func_provider): the task
// model of a family trained for --epochs epochs from --pretrained-checkpoint (or resumed from
// --load), with megatron-train's optimizer, schedule, trainer and checkpoints, on the samples in
// the order of Megatron's DistributedSampler loaders, and its accuracy on every --valid-data
// set at each epoch's end (or once, epoch -1, for --epochs 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/cli/flags.h"
#include "mt/model.h"
#include "mt/train/training_flags.h"
#include "task_accuracy.h"

namespace mt::eval {

struct FinetuneFlags {
    std::string task;                                 // --task: RACE, MNLI or QQP
    std::vector<std::string> train_data, valid_data;  // --train-data, --valid-data
    std::optional<int64_t> epochs;                    // --epochs; 0: evaluation only
    bool keep_last = false;                           // --keep-last
    std::optional<std::string> pretrained_checkpoint;
    std::string output_json;  // --output-json; empty: none
    // Megatron's training flags: --lr, --micro-batch-size, --seed, --save, --load, ...
    train::TrainingFlags training;
    cli::TokenizerFlags tokenizer;
};

// One run of the accuracy callback.
struct EpochAccuracy {
    int64_t epoch = 0;  // from 0; -1 for --epochs 0
    // Each --valid-data set under Megatron's name for it, in order.
    std::vector<std::pair<std::string, AccuracyCount>> datasets;
    AccuracyCount overall;
};

// Runs the task on this process's ranks (an mpirun/srun job or one process): prints Megatron's
// lines (dataset building, setup, the training log, evaluations, " >> |epoch: E| overall: ..."),
// writes --output-json, and returns every accuracy measured. `model_args`: the family's model
// flags (with their defaults); `model_flags`: the family's flags. mt::Error for what Megatron
// refuses (no --epochs, gradient accumulation, --rampup-batch-size) and what is not supported
// yet; an error on one rank stops every rank.
std::vector<EpochAccuracy> finetune(const FinetuneFlags& flags, const ModelFamily& family,
                                    const ModelArgs& model_args,
                                    const std::vector<FlagInfo>& model_flags);

// The JSON object --output-json holds: the task, its data, seq_length and epochs, and for each
// callback its epoch, each set's name, correct, total and accuracy (percent), and the overall.
std::string finetune_json(const FinetuneFlags& flags, int64_t seq_length,
                          const std::vector<EpochAccuracy>& results);

}  // namespace mt::eval
