// BlendedMegatronDatasetBuilder for any model family: turns the config's blend (or per-split
// blends), split and requested sizes into the train/valid/test datasets Megatron would build, in
// the same order, from the family's per-prefix datasets (spec §2.4).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "mt/api.h"
#include "mt/data/blended_dataset.h"
#include "mt/data/blended_megatron_dataset_config.h"

namespace mt::data {

using SplitSizes = std::array<std::optional<int64_t>, kNumSplits>;
using SplitDatasets = std::array<std::shared_ptr<SampleDataset>, kNumSplits>;

// Megatron's _build_megatron_dataset_splits for the family's dataset class: the prefix's
// low-level datasets for the splits `matrix` holds (absent elsewhere), each sized as asked
// (nullopt: one epoch), with their unique_identifiers.
using BuildPrefixSplits = std::function<std::array<std::optional<BlendPart>, kNumSplits>(
    const std::string& prefix, const SplitMatrix& matrix, const SplitSizes& sizes)>;

// One dataset per split (null where the split is absent). Single prefix without weights: the
// prefix's dataset of size >= sizes[i]; several prefixes or weights: a BlendedDataset over one
// dataset per prefix, sized with the config's mid-level surplus.
MT_API SplitDatasets build_blended_megatron_datasets(const BlendedMegatronDatasetConfig& config,
                                                     const SplitSizes& sizes,
                                                     const BuildPrefixSplits& build_splits);

}  // namespace mt::data
