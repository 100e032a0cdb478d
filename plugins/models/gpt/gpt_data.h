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

// --reset-position-ids, --reset-attention-mask, --eod-mask-loss, --num-workers and, with `fim`
// (pretrain_gpt.py's; pretrain_hybrid.py has no fill-in-the-middle dataset), the --fim-* flags.
std::vector<FlagInfo> gpt_data_flags(bool fim);
std::array<std::shared_ptr<data::SampleDataset>, 3> gpt_datasets(
    const data::DatasetRequest& request);

}  // namespace mt::plugins::gpt
