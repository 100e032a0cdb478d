// pretrain_t5.py's datasets: T5MaskedWordPieceDataset per split of a sentence-split corpus, with
// --mask-prob, --short-seq-prob, the encoder's and decoder's lengths and the tokenizer's [BOS],
// [EOS] and sentinels (--vocab-extra-ids).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "mt/data/dataset_request.h"
#include "mt/data/sample_dataset.h"
#include "mt/model.h"

namespace mt::plugins::t5 {

// --mask-prob, --short-seq-prob.
std::vector<FlagInfo> t5_data_flags();
std::array<std::shared_ptr<data::SampleDataset>, 3> t5_datasets(
    const data::DatasetRequest& request);

}  // namespace mt::plugins::t5
