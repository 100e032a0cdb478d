// A finetuning task's examples as the micro-batches its BERT task model reads (Megatron's
// tasks/finetune_utils.py process_batch): "text", "types" and "padding_mask" i64 [B, T] for a
// classification task (MNLI, QQP), [B, C, T] for a multiple-choice one (RACE, C = 4), and
// "label" i64 [B].
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "classification_example.h"
#include "mt/data/sample_dataset.h"

namespace mt::eval {

class ClassificationDataset : public data::SampleDataset {
  public:
    // `multiple_choice`: every example's rows are its choices ([B, C, T]); else each example has
    // one row ([B, T]). mt::Error when an example's rows differ in number or length from the
    // first one's.
    ClassificationDataset(std::vector<ClassificationExample> examples, bool multiple_choice,
                          data::Split split);

    int64_t size() const override { return int64_t(examples_.size()); }
    data::Split split() const override { return split_; }
    Batch batch(std::span<const int64_t> indices) const override;

  private:
    std::vector<ClassificationExample> examples_;
    bool multiple_choice_;
    data::Split split_;
    int64_t rows_ = 1, length_ = 0;  // rows per example, tokens per row
};

}  // namespace mt::eval
