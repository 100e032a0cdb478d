#include "mt/data/pretraining_loader.h"

#include <numeric>
#include <vector>

#include "mt/error.h"

namespace mt::data {

PretrainingLoader::PretrainingLoader(const SampleDataset& dataset, int64_t micro_batch_size,
                                     int data_parallel_rank, int data_parallel_size,
                                     int64_t consumed_samples)
    : dataset_(dataset),
      micro_batch_size_(micro_batch_size),
      rank_(data_parallel_rank),
      world_(data_parallel_size),
      consumed_(consumed_samples) {
    MT_CHECK(dataset.size() > 0, "no sample to consume: the dataset is empty");
    MT_CHECK(consumed_samples < dataset.size(), "no samples left to consume: ", consumed_samples,
             " consumed of ", dataset.size());
    MT_CHECK(micro_batch_size > 0, "--micro-batch-size must be positive, got ", micro_batch_size);
    MT_CHECK(data_parallel_size > 0 && data_parallel_rank >= 0 &&
                 data_parallel_rank < data_parallel_size,
             "data-parallel rank ", data_parallel_rank, " outside a group of ", data_parallel_size);
}

bool PretrainingLoader::next(Batch& batch) {
    const int64_t chunk = micro_batch_size_ * world_;
    if (consumed_ + chunk > dataset_.size()) return false;
    std::vector<int64_t> indices(static_cast<size_t>(micro_batch_size_));
    std::iota(indices.begin(), indices.end(), consumed_ + rank_ * micro_batch_size_);
    batch = dataset_.batch(indices);
    consumed_ += chunk;
    return true;
}

}  // namespace mt::data
