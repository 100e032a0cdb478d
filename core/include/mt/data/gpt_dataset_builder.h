// BlendedMegatronDatasetBuilder for GPT: turns the config's blend (or per-split blends), split
// and requested sizes into the train/valid/test datasets Megatron would build, in the same order.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "mt/api.h"
#include "mt/data/blended_dataset.h"
#include "mt/data/gpt_dataset.h"

namespace mt::data {

// One dataset per split (null where the split is absent). `sizes` are the requested sample
// counts (nullopt: one epoch / exhaustive). Single prefix without weights: a GPTDataset of size
// >= sizes[i]; several prefixes: a BlendedDataset over one GPTDataset per prefix (the cases of
// BlendedMegatronDatasetBuilder.build, spec §2.4).
MT_API std::array<std::shared_ptr<GPTSampleDataset>, kNumSplits> build_gpt_datasets(
    const GPTDatasetConfig& config, const std::array<std::optional<int64_t>, kNumSplits>& sizes);

}  // namespace mt::data
