// Megatron's BlendedDataset and its helpers.cpp blending indices: which source dataset, and which
// of its samples, each position of a weighted blend reads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/gpt_dataset.h"
#include "mt/data/npy.h"

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

class MT_API BlendedDataset : public GPTSampleDataset {
  public:
    // `weights` are either fractions (size given; they are normalised again, as Megatron does) or,
    // with `integer_weights`, sample counts (Megatron passes dataset lengths). Without a size the
    // blend is exhaustive and the counts must be integers. Throws when the blend needs more
    // samples from a dataset than it has.
    BlendedDataset(std::vector<std::shared_ptr<const GPTDataset>> datasets,
                   std::vector<double> weights, bool integer_weights, std::optional<int64_t> size,
                   const GPTDatasetConfig& config);

    int64_t size() const override { return dataset_index_.numel(); }
    GPTSample get(int64_t i) const override;
    Split split() const override { return split_; }

    const std::vector<std::shared_ptr<const GPTDataset>>& datasets() const { return datasets_; }
    const NpyArray& dataset_index() const { return dataset_index_; }
    const NpyArray& dataset_sample_index() const { return dataset_sample_index_; }
    const std::vector<double>& weights() const { return weights_; }
    const std::string& unique_description() const { return unique_description_; }
    const std::string& unique_description_hash() const { return unique_description_hash_; }
    bool loaded_from_cache() const { return loaded_from_cache_; }

  private:
    std::vector<std::shared_ptr<const GPTDataset>> datasets_;
    std::vector<double> weights_;
    bool integer_weights_ = false;
    std::optional<int64_t> size_;
    Split split_;
    std::string unique_description_, unique_description_hash_;
    NpyArray dataset_index_, dataset_sample_index_;
    bool loaded_from_cache_ = false;
};

}  // namespace mt::data
