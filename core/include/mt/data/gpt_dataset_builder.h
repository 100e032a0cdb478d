// The GPT datasets pretrain_gpt.py builds: BlendedMegatronDatasetBuilder over GPTDataset, or
// MockGPTDataset under --mock-data.
#pragma once

#include <functional>
#include <memory>

#include "mt/api.h"
#include "mt/data/blended_megatron_dataset_builder.h"
#include "mt/data/gpt_dataset.h"

namespace mt::data {

// One dataset per split (null where the split is absent); `sizes` are the requested sample
// counts (nullopt: one epoch / exhaustive).
// `wrap`, when given, makes each low-level dataset what the splits and blends hold
// (GPTFIMDataset over it).
using GPTDatasetWrap =
    std::function<std::shared_ptr<SampleDataset>(std::shared_ptr<const GPTDataset>)>;
MT_API SplitDatasets build_gpt_datasets(const GPTDatasetConfig& config, const SplitSizes& sizes,
                                        const GPTDatasetWrap& wrap = {});

}  // namespace mt::data
