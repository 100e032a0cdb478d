// Micro-batches in Megatron's pretraining order, by --dataloader-type:
//   single (MegatronPretrainingSampler, the default): indices consumed, consumed+1, ... grouped
//     in chunks of micro_batch_size x data_parallel_size, rank r taking slice
//     [r·mbs, (r+1)·mbs) of each chunk; a last partial chunk is dropped.
//   cyclic (MegatronPretrainingRandomSampler, restarted whenever it runs out: an epoch of
//     A = size - size mod chunk samples, epoch e = consumed / A, shuffled by
//     torch.randperm(·, manual_seed(e))): with data sharding (the default; --no-data-sharding
//     turns it off) rank r reads its own bucket [r·B, (r+1)·B), B = (size / chunk)·mbs, in
//     the order of a permutation of B, from (consumed mod A) / dp on; without, every rank
//     reads one permutation of (size / mbs)·mbs from consumed mod A on, taking every dp-th
//     index from its rank.
// Resuming from consumed_samples continues the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/data/sample_dataset.h"

namespace mt::data {

// --dataloader-type cyclic (else single) and its --no-data-sharding.
struct LoaderOrder {
    bool cyclic = false;
    bool data_sharding = true;
};

class MT_API PretrainingLoader {
  public:
    PretrainingLoader(const SampleDataset& dataset, int64_t micro_batch_size,
                      int data_parallel_rank, int data_parallel_size, int64_t consumed_samples,
                      LoaderOrder order = {});

    // The next micro-batch of this rank; false when the dataset has no full chunk left.
    bool next(Batch& batch);
    // Samples consumed by all data-parallel ranks so far (what checkpoints record).
    int64_t consumed_samples() const { return consumed_; }

  private:
    // The cyclic order's indices of this rank's next micro-batch.
    std::vector<int64_t> cyclic_indices();

    const SampleDataset& dataset_;
    int64_t micro_batch_size_;
    int rank_, world_;
    int64_t consumed_;
    LoaderOrder order_;
    // The cyclic order: the current epoch's permutation (torch.randperm seeded with the epoch).
    int64_t epoch_ = -1;
    std::vector<int64_t> permutation_;
};

}  // namespace mt::data
