// The accuracy of Megatron's finetuning tasks (tasks/eval_utils.py accuracy_func_provider,
// calculate_correct_answers): the task model's first argmax against each example's label over
// a validation set, read by each data-parallel rank as its DataLoader gives it, and Megatron's
// result lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "finetune_order.h"
#include "mt/data/sample_dataset.h"
#include "mt/model.h"

namespace mt::eval {

struct AccuracyCount {
    int64_t correct = 0, total = 0;
};

// This rank's count over its share of `dataset`: the indices its DistributedSampler yields
// (never re-seeded: seed 0) in batches of shape.micro_batch_size, a last partial batch kept
// unless shape.drop_last (Megatron: drop_last when data-parallel). An example is correct when
// the first maximum of model.predict's row (f32 or f64 [B, classes]; a NaN counts as the
// maximum, as in torch.argmax) is its "label". on_batch(examples) follows each batch.
AccuracyCount count_correct(Model& model, const data::SampleDataset& dataset,
                            const LoaderShape& shape, int64_t rank,
                            const std::function<void(int64_t)>& on_batch);

// " > |epoch: E| metrics for NAME: correct / total = C / T = P %, elapsed time (sec): S" with P
// = 100 C / T to 4 decimals and S to 3. mt::Error when T is 0 (Megatron divides by it).
std::string dataset_accuracy_line(int64_t epoch, const std::string& name,
                                  const AccuracyCount& count, double seconds);
// " >> |epoch: E| overall: correct / total = C / T = P %".
std::string overall_accuracy_line(int64_t epoch, const AccuracyCount& count);

// 100 C / T as Megatron computes it (float(C) * 100.0 / float(T)).
double accuracy_percent(const AccuracyCount& count);

}  // namespace mt::eval
