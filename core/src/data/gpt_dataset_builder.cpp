// BlendedMegatronDatasetBuilder(GPTDataset or MockGPTDataset, ...) as pretrain_gpt.py uses it.
#include "mt/data/gpt_dataset_builder.h"

#include <string>

#include "mt/data/mock_gpt_sequences.h"
#include "mt/error.h"

namespace mt::data {

namespace {

// _build_megatron_dataset_splits: one low-level dataset (the prefix's, or the mock data's
// without one), split by sequence.
std::array<std::optional<BlendPart>, kNumSplits> build_splits(
    const std::optional<std::string>& prefix, const SplitMatrix& matrix, const SplitSizes& sizes,
    const GPTDatasetConfig& config, const GPTDatasetWrap& wrap) {
    std::shared_ptr<const TokenSequences> data;
    if (prefix)
        data = std::make_shared<const IndexedDataset>(IndexedDataset::open(*prefix));
    else
        data = std::make_shared<const MockGptSequences>(config.eod_id, config.vocab_size);
    std::array<std::optional<BlendPart>, kNumSplits> out;
    for (int i = 0; i < kNumSplits; ++i) {
        if (!matrix[i]) continue;
        auto [begin, end] = split_range(*matrix[i], data->num_sequences());
        auto dataset = std::make_shared<GPTDataset>(data, prefix, begin, end, sizes[i],
                                                    static_cast<Split>(i), config);
        out[i] = BlendPart{wrap ? wrap(dataset) : dataset, dataset->unique_identifiers()};
    }
    return out;
}

}  // namespace

SplitDatasets build_gpt_datasets(const GPTDatasetConfig& given, const SplitSizes& sizes,
                                 const GPTDatasetWrap& wrap) {
    if (!given.mock) {
        return build_blended_megatron_datasets(
            given, sizes,
            [&](const std::string& prefix, const SplitMatrix& m, const SplitSizes& s) {
                return build_splits(prefix, m, s, given, wrap);
            });
    }
    bool per_split = false;
    for (const auto& b : given.blend_per_split) per_split = per_split || b.has_value();
    MT_CHECK(!given.blend && !per_split,
             "--mock-data cannot be combined with --data-path or per-split data paths");
    // BlendedMegatronDatasetConfig: no blend means mock data on an even split.
    GPTDatasetConfig config = given;
    config.split = "1,1,1";
    SplitDatasets out;
    const auto parts = build_splits(std::nullopt, *config.split_matrix(), sizes, config, wrap);
    for (int i = 0; i < kNumSplits; ++i)
        if (parts[i]) out[i] = parts[i]->dataset;
    return out;
}

}  // namespace mt::data
