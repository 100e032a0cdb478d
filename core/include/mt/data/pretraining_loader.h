// Micro-batches in Megatron's pretraining order (MegatronPretrainingSampler, the default
// --dataloader-type single): indices consumed, consumed+1, ... grouped in chunks of
// micro_batch_size x data_parallel_size, rank r taking slice [r·mbs, (r+1)·mbs) of each chunk;
// a last partial chunk is dropped. Resuming from consumed_samples continues the same order.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/data/sample_dataset.h"

namespace mt::data {

class MT_API PretrainingLoader {
  public:
    PretrainingLoader(const SampleDataset& dataset, int64_t micro_batch_size,
                      int data_parallel_rank, int data_parallel_size, int64_t consumed_samples);

    // The next micro-batch of this rank; false when the dataset has no full chunk left.
    bool next(Batch& batch);
    // Samples consumed by all data-parallel ranks so far (what checkpoints record).
    int64_t consumed_samples() const { return consumed_; }

  private:
    const SampleDataset& dataset_;
    int64_t micro_batch_size_;
    int rank_, world_;
    int64_t consumed_;
};

}  // namespace mt::data
