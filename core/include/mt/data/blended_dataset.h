// Megatron's BlendedDataset and its helpers.cpp blending indices: which source dataset, and which
// of its samples, each position of a weighted blend reads, for any model family's datasets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/blended_megatron_dataset_config.h"
#include "mt/data/dataset_description.h"
#include "mt/data/npy.h"
#include "mt/data/sample_dataset.h"

namespace mt::data {

// build_blending_indices: for s in [0, size): k = argmax_k(w_k * max(s, 1) - count_k) (first wins
// ties); dataset_index[s] = k (int16), dataset_sample_index[s] = count_k++ (int64).
MT_API void build_blending_indices(const std::vector<double>& weights, int64_t size,
                                   NpyArray& dataset_index, NpyArray& dataset_sample_index);
// build_exhaustive_blending_indices: every dataset k contributes exactly sizes[k] samples, by the
// same error criterion restricted to datasets not yet exhausted.
MT_API void build_exhaustive_blending_indices(const std::vector<int64_t>& sizes,
                                              NpyArray& dataset_index,
                                              NpyArray& dataset_sample_index);

// One dataset of a blend and its Megatron unique_identifiers (part of the blend's description).
struct BlendPart {
    std::shared_ptr<SampleDataset> dataset;
    JsonValue unique_identifiers;
};

// Megatron's BlendedDataset over any family's datasets of one split: position s reads sample
// dataset_sample_index[s] of dataset dataset_index[s]. Its batches hold the parts' fields, row by
// row from whichever part each index falls in, and "dataset_id" (i64 [B]) as Megatron adds it.
class MT_API BlendedDataset : public SampleDataset {
  public:
    // `weights` are either fractions (size given; they are normalised again, as Megatron does) or,
    // with `integer_weights`, sample counts (Megatron passes dataset lengths). Without a size the
    // blend is exhaustive and the counts must be integers. Throws when the blend needs more
    // samples from a dataset than it has. Only config.path_to_cache (where the indices are
    // cached; nowhere without it, as in Megatron) and the surplus (for the error) are read.
    BlendedDataset(std::vector<BlendPart> parts, std::vector<double> weights, bool integer_weights,
                   std::optional<int64_t> size, const BlendedMegatronDatasetConfig& config);

    int64_t size() const override { return dataset_index_.numel(); }
    Split split() const override { return split_; }
    Batch batch(std::span<const int64_t> indices) const override;
    void skip_batch() const override;

    const std::vector<BlendPart>& parts() const { return parts_; }
    const NpyArray& dataset_index() const { return dataset_index_; }
    const NpyArray& dataset_sample_index() const { return dataset_sample_index_; }
    const std::vector<double>& weights() const { return weights_; }
    const std::string& unique_description() const { return unique_description_; }
    const std::string& unique_description_hash() const { return unique_description_hash_; }
    bool loaded_from_cache() const { return loaded_from_cache_; }

  private:
    std::vector<BlendPart> parts_;
    std::vector<double> weights_;
    bool integer_weights_ = false;
    std::optional<int64_t> size_;
    Split split_;
    std::string unique_description_, unique_description_hash_;
    NpyArray dataset_index_, dataset_sample_index_;
    bool loaded_from_cache_ = false;
};

}  // namespace mt::data
