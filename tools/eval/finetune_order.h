// The order Megatron's finetuning feeds a task's samples to each data-parallel rank
// (tasks/finetune_utils.py build_data_loader): torch's DistributedSampler (shuffle=True, seed=0,
// drop_last=False: a torch.randperm of the dataset padded to a multiple of the ranks by
// repeating its start, rank r taking every dp-th index from r) under
// DataLoader(batch_size=micro_batch_size, drop_last), re-seeded each epoch by set_epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "mt/data/sample_dataset.h"

namespace mt::eval {

// One rank's data loader over a dataset, as Megatron builds it.
struct LoaderShape {
    int64_t samples = 0;  // the dataset's size
    int64_t micro_batch_size = 1;
    int64_t data_parallel = 1;
    bool drop_last = true;  // the DataLoader's (training: not --keep-last)
};

// The dataset indices DistributedSampler yields to rank `rank` in an epoch whose generator is
// seeded `seed` (the sampler's seed 0 plus set_epoch's value): ceil(samples / dp) of them.
std::vector<int64_t> distributed_sampler_indices(int64_t samples, int64_t data_parallel,
                                                 int64_t rank, uint64_t seed);

// len(DataLoader) on each rank: its sampler's ceil(samples / dp) indices in batches of
// micro_batch_size, a last partial batch counted unless drop_last.
int64_t batches_per_epoch(const LoaderShape& shape);

// `dataset` in the order of Megatron's loaders, epoch after epoch, for the trainer's
// PretrainingLoader: sequential sample s lies in epoch s / samples_per_epoch(); within it,
// chunk b of micro_batch_size x dp samples holds every rank's batch b, rank r's at slice
// [r·mbs, (r+1)·mbs): exactly what rank r's DataLoader gives in its b-th batch. A last partial
// batch (a DataLoader without drop_last whose rank gets a share that is not a multiple of the
// micro-batch size) has no place in such chunks: mt::Error "not supported yet".
class EpochOrderedDataset : public data::SampleDataset {
  public:
    // epoch_seed(e): the generator seed of epoch e (Megatron's training loader: --seed + e;
    // its validation loader, never re-seeded: 0); `epochs`: how many epochs the view holds.
    EpochOrderedDataset(const data::SampleDataset& dataset, const LoaderShape& shape,
                        int64_t epochs, std::function<uint64_t(int64_t)> epoch_seed);

    int64_t size() const override { return epochs_ * samples_per_epoch_; }
    data::Split split() const override { return dataset_.split(); }
    Batch batch(std::span<const int64_t> indices) const override;

    // batches_per_epoch x micro_batch_size x dp.
    int64_t samples_per_epoch() const { return samples_per_epoch_; }
    // The dataset index of sequential sample s.
    int64_t sample(int64_t s) const;

  private:
    const data::SampleDataset& dataset_;
    LoaderShape shape_;
    int64_t epochs_, samples_per_epoch_;
    std::function<uint64_t(int64_t)> epoch_seed_;
    // The permutation of the last seed asked for (an epoch's samples come in order).
    mutable std::mutex mutex_;
    mutable std::vector<int64_t> permutation_;
    mutable uint64_t permutation_seed_ = 0;
    mutable bool have_permutation_ = false;
};

}  // namespace mt::eval
