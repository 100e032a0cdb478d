// What a training loop reads: a model family's samples, collated into the micro-batches its
// model's forward takes (GPT: tokens, labels, loss_mask, ...; BERT: text, types, padding_mask,
// ...). The loop knows only the sample count and the order; the family knows the fields.
#pragma once

#include <cstdint>
#include <span>

#include "mt/api.h"
#include "mt/data/blend_split.h"
#include "mt/model.h"

namespace mt::data {

class MT_API SampleDataset {
  public:
    virtual ~SampleDataset() = default;
    virtual int64_t size() const = 0;
    virtual Split split() const = 0;
    // Samples `indices` (each < size()) stacked along a leading batch dimension, in order.
    virtual Batch batch(std::span<const int64_t> indices) const = 0;
    // A batch of the loop that holds none of this dataset's samples (a blend's part): for
    // datasets that keep state per batch (GPTFIMDataset's data-loader workers) in step with the
    // loop. Nothing by default.
    virtual void skip_batch() const {}
};

}  // namespace mt::data
