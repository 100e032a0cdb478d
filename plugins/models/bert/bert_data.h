// pretrain_bert.py's datasets: BERTMaskedWordPieceDataset per split of a sentence-split corpus,
// with --mask-prob and --short-seq-prob.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "mt/data/dataset_request.h"
#include "mt/data/sample_dataset.h"
#include "mt/model.h"

namespace mt::plugins::bert {

// --mask-prob, --short-seq-prob.
std::vector<FlagInfo> bert_data_flags();
std::array<std::shared_ptr<data::SampleDataset>, 3> bert_datasets(
    const data::DatasetRequest& request);

}  // namespace mt::plugins::bert
