#include "mt/data/pretraining_loader.h"

#include <numeric>
#include <vector>

#include "mt/data/torch_randperm.h"
#include "mt/error.h"

namespace mt::data {

PretrainingLoader::PretrainingLoader(const SampleDataset& dataset, int64_t micro_batch_size,
                                     int data_parallel_rank, int data_parallel_size,
                                     int64_t consumed_samples, LoaderOrder order)
    : dataset_(dataset),
      micro_batch_size_(micro_batch_size),
      rank_(data_parallel_rank),
      world_(data_parallel_size),
      consumed_(consumed_samples),
      order_(order) {
    MT_CHECK(dataset.size() > 0, "no sample to consume: the dataset is empty");
    MT_CHECK(order.cyclic || consumed_samples < dataset.size(), "no samples left to consume: ",
             consumed_samples, " consumed of ", dataset.size());
    MT_CHECK(micro_batch_size > 0, "--micro-batch-size must be positive, got ", micro_batch_size);
    MT_CHECK(data_parallel_size > 0 && data_parallel_rank >= 0 &&
                 data_parallel_rank < data_parallel_size,
             "data-parallel rank ", data_parallel_rank, " outside a group of ", data_parallel_size);
}

bool PretrainingLoader::next(Batch& batch) {
    const int64_t chunk = micro_batch_size_ * world_;
    std::vector<int64_t> indices(static_cast<size_t>(micro_batch_size_));
    if (order_.cyclic) {
        indices = cyclic_indices();
    } else {
        if (consumed_ + chunk > dataset_.size()) return false;
        std::iota(indices.begin(), indices.end(), consumed_ + rank_ * micro_batch_size_);
    }
    batch = dataset_.batch(indices);
    consumed_ += chunk;
    return true;
}

std::vector<int64_t> PretrainingLoader::cyclic_indices() {
    const int64_t total = dataset_.size(), mbs = micro_batch_size_, chunk = mbs * world_;
    const int64_t active = total - total % chunk;
    MT_CHECK(active > 0, "--dataloader-type cyclic: ", total,
             " samples fill no micro-batch on every data-parallel rank (", chunk, ")");
    const int64_t epoch = consumed_ / active, current = consumed_ % active;
    MT_CHECK(current % chunk == 0, "--dataloader-type cyclic: ", consumed_,
             " consumed samples are not whole micro-batches of every rank (", chunk,
             ") into an epoch of ", active, " (Megatron asserts it)");
    const int64_t size = order_.data_sharding ? (total / chunk) * mbs : (total / mbs) * mbs;
    if (epoch_ != epoch) {
        permutation_ = torch_randperm(size, uint64_t(epoch));
        epoch_ = epoch;
    }
    std::vector<int64_t> indices(static_cast<size_t>(mbs));
    for (int64_t k = 0; k < mbs; ++k)
        indices[size_t(k)] =
            order_.data_sharding
                ? rank_ * size + permutation_[size_t(current / world_ + k)]
                : permutation_[size_t(current + rank_ + world_ * k)];
    return indices;
}

}  // namespace mt::data
