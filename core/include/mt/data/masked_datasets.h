// What pretrain_bert.py and pretrain_t5.py do alike to build their masked datasets: read
// --mask-prob / --short-seq-prob and the tokenizer's special tokens into the config, then build
// each split's dataset over documents of each blended corpus (Megatron splits a masked dataset by
// documents, so a document's sentences stay together).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/blended_megatron_dataset_builder.h"
#include "mt/data/dataset_request.h"
#include "mt/data/indexed_dataset.h"
#include "mt/data/masked_word_piece_dataset.h"
#include "mt/model.h"

namespace mt::data {

// --mask-prob, --short-seq-prob.
MT_API std::vector<FlagInfo> masked_data_flags();

// The request's flags and tokenizer in `c`: --mask-prob, --short-seq-prob, the tokenizer's
// [CLS], [SEP], [MASK], [PAD] and vocabulary. `family` ("BERT", "T5") names who needs them in
// errors; mock data is refused (Megatron has no mock masked dataset).
MT_API void read_masked_request(const DatasetRequest& request, const char* family,
                                MaskedWordPieceDatasetConfig& c);

// Each split's `Dataset` (constructed as BertMaskedWordPieceDataset is) with config `c`, blended
// as the request says.
template <class Dataset, class Config>
std::array<std::shared_ptr<SampleDataset>, 3> masked_datasets(const DatasetRequest& request,
                                                              const Config& c) {
    auto build_splits = [&](const std::string& prefix, const SplitMatrix& matrix,
                            const SplitSizes& sizes) {
        auto corpus = std::make_shared<const IndexedDataset>(IndexedDataset::open(prefix));
        std::array<std::optional<BlendPart>, kNumSplits> out;
        for (int i = 0; i < kNumSplits; ++i) {
            if (!matrix[size_t(i)]) continue;
            const auto [begin, end] = split_range(*matrix[size_t(i)], corpus->num_documents());
            auto dataset = std::make_shared<Dataset>(corpus, prefix, begin, end, sizes[size_t(i)],
                                                     static_cast<Split>(i), c);
            out[size_t(i)] = BlendPart{dataset, dataset->unique_identifiers()};
        }
        return out;
    };
    const auto built = build_blended_megatron_datasets(c, request.num_samples, build_splits);
    return {built[0], built[1], built[2]};
}

}  // namespace mt::data
