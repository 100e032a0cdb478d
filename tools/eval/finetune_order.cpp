#include "finetune_order.h"

#include "mt/data/torch_randperm.h"
#include "mt/error.h"

namespace mt::eval {

namespace {

// DistributedSampler's num_samples (without drop_last): ceil(samples / dp).
int64_t per_rank(int64_t samples, int64_t data_parallel) {
    return (samples + data_parallel - 1) / data_parallel;
}

}  // namespace

std::vector<int64_t> distributed_sampler_indices(int64_t samples, int64_t data_parallel,
                                                 int64_t rank, uint64_t seed) {
    MT_CHECK(data_parallel > 0 && rank >= 0 && rank < data_parallel, "rank ", rank, " of ",
             data_parallel, " data-parallel ranks");
    const std::vector<int64_t> perm = data::torch_randperm(samples, seed);
    const int64_t count = per_rank(samples, data_parallel);
    std::vector<int64_t> out;
    out.reserve(size_t(count));
    // The permutation padded to count x dp by repeating it from its start.
    for (int64_t i = 0; i < count; ++i)
        out.push_back(perm[size_t((rank + i * data_parallel) % samples)]);
    return out;
}

int64_t batches_per_epoch(const LoaderShape& s) {
    MT_CHECK(s.micro_batch_size > 0 && s.data_parallel > 0,
             "the micro-batch size and the data-parallel size must be positive");
    const int64_t n = per_rank(s.samples, s.data_parallel);
    return s.drop_last ? n / s.micro_batch_size : (n + s.micro_batch_size - 1) / s.micro_batch_size;
}

EpochOrderedDataset::EpochOrderedDataset(const data::SampleDataset& dataset,
                                         const LoaderShape& shape, int64_t epochs,
                                         std::function<uint64_t(int64_t)> epoch_seed)
    : dataset_(dataset), shape_(shape), epochs_(epochs), epoch_seed_(std::move(epoch_seed)) {
    MT_CHECK(shape_.samples == dataset_.size(), "the loader covers ", shape_.samples,
             " samples, the dataset has ", dataset_.size());
    MT_CHECK(epochs_ >= 0, "epochs must not be negative, got ", epochs_);
    MT_CHECK(shape_.drop_last ||
                 per_rank(shape_.samples, shape_.data_parallel) % shape_.micro_batch_size == 0,
             "not supported yet: --keep-last with a last partial batch (each of the ",
             shape_.data_parallel, " data-parallel ranks gets ",
             per_rank(shape_.samples, shape_.data_parallel), " of the ", shape_.samples, " ",
             data::split_name(dataset_.split()), " samples, not a multiple of --micro-batch-size ",
             shape_.micro_batch_size, ")");
    samples_per_epoch_ = batches_per_epoch(shape_) * shape_.micro_batch_size * shape_.data_parallel;
}

int64_t EpochOrderedDataset::sample(int64_t s) const {
    MT_CHECK(s >= 0 && s < size(), "sample ", s, " of ", size());
    const int64_t epoch = s / samples_per_epoch_, r = s % samples_per_epoch_;
    const int64_t mbs = shape_.micro_batch_size, dp = shape_.data_parallel;
    const int64_t chunk = r / (mbs * dp), within = r % (mbs * dp);
    const int64_t rank = within / mbs, j = within % mbs;
    // Rank `rank`'s batch `chunk`, element j: its sampler's index chunk·mbs + j, which is the
    // padded permutation's (chunk·mbs + j)·dp + rank.
    const int64_t padded = (chunk * mbs + j) * dp + rank;
    const uint64_t seed = epoch_seed_(epoch);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!have_permutation_ || permutation_seed_ != seed) {
        permutation_ = data::torch_randperm(shape_.samples, seed);
        permutation_seed_ = seed;
        have_permutation_ = true;
    }
    return permutation_[size_t(padded % shape_.samples)];
}

Batch EpochOrderedDataset::batch(std::span<const int64_t> indices) const {
    std::vector<int64_t> samples;
    samples.reserve(indices.size());
    for (int64_t s : indices) samples.push_back(sample(s));
    return dataset_.batch(samples);
}

}  // namespace mt::eval
