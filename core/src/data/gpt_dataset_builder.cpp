// megatron/core/datasets/blended_megatron_dataset_builder.py (core_v0.13.0) for GPTDataset.
#include "mt/data/gpt_dataset_builder.h"

#include <string>
#include <vector>

#include "mt/data/mock_gpt_sequences.h"
#include "mt/error.h"

namespace mt::data {

namespace {

using Sizes = std::array<std::optional<int64_t>, kNumSplits>;
using Datasets = std::array<std::shared_ptr<GPTSampleDataset>, kNumSplits>;
using MidLevel = std::array<std::shared_ptr<GPTDataset>, kNumSplits>;

// _build_megatron_dataset_splits: one low-level dataset (the prefix's, or the mock data's
// without one), split by sequence.
MidLevel build_splits(const std::optional<std::string>& prefix, const SplitMatrix& matrix,
                      const Sizes& sizes, const GPTDatasetConfig& config) {
    std::shared_ptr<const TokenSequences> data;
    if (prefix)
        data = std::make_shared<const IndexedDataset>(IndexedDataset::open(*prefix));
    else
        data = std::make_shared<const MockGptSequences>(config.eod_id);
    MidLevel out;
    for (int i = 0; i < kNumSplits; ++i) {
        if (!matrix[i]) continue;
        auto [begin, end] = split_range(*matrix[i], data->num_sequences());
        out[i] = std::make_shared<GPTDataset>(data, prefix, begin, end, sizes[i],
                                              static_cast<Split>(i), config);
    }
    return out;
}

// Several prefixes (or one with a weight): mid-level datasets, then one BlendedDataset per
// present split.
Datasets build_blend(const Blend& blend, const SplitMatrix& matrix, const Sizes& sizes,
                     const GPTDatasetConfig& config) {
    std::optional<std::vector<double>> weights;
    std::vector<std::array<int64_t, kNumSplits>> target, buffer;
    if (blend.weights) {
        weights = normalize_weights(*blend.weights);
        std::array<int64_t, kNumSplits> s{};
        for (int i = 0; i < kNumSplits; ++i) {
            MT_CHECK(sizes[i].has_value(), "a weighted blend needs a requested size for the ",
                     split_name(static_cast<Split>(i)), " split");
            s[i] = *sizes[i];
        }
        target = size_per_split_per_dataset(*weights, s);
        buffer = size_per_split_per_dataset(*weights, s, config.mid_level_dataset_surplus);
    }
    std::vector<MidLevel> mids;
    for (size_t k = 0; k < blend.prefixes.size(); ++k) {
        Sizes per_dataset{};
        if (weights) {
            for (int i = 0; i < kNumSplits; ++i) per_dataset[i] = buffer[k][i];
        }
        mids.push_back(build_splits(blend.prefixes[k], matrix, per_dataset, config));
    }
    Datasets out;
    for (int i = 0; i < kNumSplits; ++i) {
        if (!matrix[i]) continue;
        std::vector<std::shared_ptr<const GPTDataset>> parts;
        for (const auto& m : mids) parts.push_back(m[i]);
        if (weights) {
            int64_t size = 0;
            for (const auto& row : target) size += row[i];
            out[i] = std::make_shared<BlendedDataset>(parts, *weights, false, size, config);
        } else {
            std::vector<double> lengths;
            int64_t total = 0;
            for (const auto& p : parts) {
                lengths.push_back(static_cast<double>(p->size()));
                total += p->size();
            }
            std::optional<int64_t> size;
            if (sizes[i]) size = std::min(*sizes[i], total);
            out[i] = std::make_shared<BlendedDataset>(parts, lengths, true, size, config);
        }
    }
    return out;
}

}  // namespace

Datasets build_gpt_datasets(const GPTDatasetConfig& given, const Sizes& sizes) {
    GPTDatasetConfig config = given;
    bool per_split = false;
    for (const auto& b : config.blend_per_split) per_split = per_split || b.has_value();
    MT_CHECK(!(config.blend && per_split),
             "--data-path cannot be combined with per-split data paths");
    for (int i = 0; i < kNumSplits; ++i) {
        const std::optional<Blend>& b = config.blend ? config.blend : config.blend_per_split[i];
        MT_CHECK(sizes[i] || !b || !b->weights, "the ", split_name(static_cast<Split>(i)),
                 " split has weights but no requested size");
    }
    Datasets out;
    if (config.mock) {
        MT_CHECK(!config.blend && !per_split,
                 "--mock-data cannot be combined with --data-path or per-split data paths");
        // BlendedMegatronDatasetConfig: no blend means mock data on an even split.
        config.split = "1,1,1";
        MidLevel m = build_splits(std::nullopt, *config.split_matrix(), sizes, config);
        for (int i = 0; i < kNumSplits; ++i) out[i] = m[i];
        return out;
    }
    if (config.blend) {
        MT_CHECK(config.split.has_value(), "--split is required with --data-path");
        const Blend& blend = *config.blend;
        MT_CHECK(!blend.prefixes.empty(), "--data-path names no dataset");
        MT_CHECK(!blend.weights || blend.weights->size() == blend.prefixes.size(),
                 "--data-path: ", blend.prefixes.size(), " prefixes but ", blend.weights->size(),
                 " weights");
        SplitMatrix matrix = *config.split_matrix();
        if (blend.prefixes.size() == 1 && !blend.weights) {
            MidLevel m = build_splits(blend.prefixes[0], matrix, sizes, config);
            for (int i = 0; i < kNumSplits; ++i) {
                out[i] = m[i];
            }
            return out;
        }
        return build_blend(blend, matrix, sizes, config);
    }
    MT_CHECK(!config.split.has_value(), "--split cannot be combined with per-split data paths");
    bool any = false;
    for (int i = 0; i < kNumSplits; ++i) {
        const std::optional<Blend>& blend = config.blend_per_split[i];
        if (!blend) continue;
        any = true;
        // Each split's blend covers its whole datasets: bookend (0.0, 1.0) at its own position.
        SplitMatrix spoof;
        spoof[i] = Bookend{0.0, 1.0, false};
        Sizes spoof_sizes{0, 0, 0};
        spoof_sizes[i] = sizes[i];
        if (blend->prefixes.size() == 1) {
            MidLevel m = build_splits(blend->prefixes[0], spoof, spoof_sizes, config);
            out[i] = m[i];
            continue;
        }
        out[i] = build_blend(*blend, spoof, spoof_sizes, config)[i];
    }
    MT_CHECK(any, "no data: give --data-path, per-split data paths or --mock-data");
    return out;
}

}  // namespace mt::data
