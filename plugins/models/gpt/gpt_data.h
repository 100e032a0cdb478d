// pretrain_gpt.py's datasets: GPTDataset (or MockGPTDataset) per split, blended as
// BlendedMegatronDatasetBuilder blends them, with the GPT-only data flags.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "mt/data/dataset_request.h"
#include "mt/data/sample_dataset.h"
#include "mt/model.h"

namespace mt::plugins::gpt {

// --reset-position-ids, --reset-attention-mask, --eod-mask-loss.
std::vector<FlagInfo> gpt_data_flags();
std::array<std::shared_ptr<data::SampleDataset>, 3> gpt_datasets(
    const data::DatasetRequest& request);

}  // namespace mt::plugins::gpt
