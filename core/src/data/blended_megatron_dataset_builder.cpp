// megatron/core/datasets/blended_megatron_dataset_builder.py (core_v0.13.0).
#include "mt/data/blended_megatron_dataset_builder.h"

#include <vector>

#include "mt/error.h"

namespace mt::data {

namespace {

using Parts = std::array<std::optional<BlendPart>, kNumSplits>;

SplitDatasets datasets_of(const Parts& parts) {
    SplitDatasets out;
    for (int i = 0; i < kNumSplits; ++i)
        if (parts[size_t(i)]) out[size_t(i)] = parts[size_t(i)]->dataset;
    return out;
}

// Several prefixes (or one with a weight): mid-level datasets, then one BlendedDataset per
// present split.
SplitDatasets build_blend(const Blend& blend, const SplitMatrix& matrix, const SplitSizes& sizes,
                          const BlendedMegatronDatasetConfig& config,
                          const BuildPrefixSplits& build_splits) {
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
    std::vector<Parts> mids;
    for (size_t k = 0; k < blend.prefixes.size(); ++k) {
        SplitSizes per_dataset{};
        if (weights) {
            for (int i = 0; i < kNumSplits; ++i) per_dataset[i] = buffer[k][i];
        }
        mids.push_back(build_splits(blend.prefixes[k], matrix, per_dataset));
    }
    SplitDatasets out;
    for (int i = 0; i < kNumSplits; ++i) {
        if (!matrix[i]) continue;
        std::vector<BlendPart> parts;
        for (size_t k = 0; k < mids.size(); ++k) {
            MT_CHECK(mids[k][i].has_value(), "no ", split_name(static_cast<Split>(i)),
                     " dataset for ", blend.prefixes[k]);
            parts.push_back(*mids[k][i]);
        }
        if (weights) {
            int64_t size = 0;
            for (const auto& row : target) size += row[i];
            out[i] = std::make_shared<BlendedDataset>(parts, *weights, false, size, config);
        } else {
            std::vector<double> lengths;
            int64_t total = 0;
            for (const BlendPart& p : parts) {
                lengths.push_back(static_cast<double>(p.dataset->size()));
                total += p.dataset->size();
            }
            std::optional<int64_t> size;
            if (sizes[i]) size = std::min(*sizes[i], total);
            out[i] = std::make_shared<BlendedDataset>(parts, lengths, true, size, config);
        }
    }
    return out;
}

}  // namespace

SplitDatasets build_blended_megatron_datasets(const BlendedMegatronDatasetConfig& config,
                                              const SplitSizes& sizes,
                                              const BuildPrefixSplits& build_splits) {
    bool per_split = false;
    for (const auto& b : config.blend_per_split) per_split = per_split || b.has_value();
    MT_CHECK(!(config.blend && per_split),
             "--data-path cannot be combined with per-split data paths");
    for (int i = 0; i < kNumSplits; ++i) {
        const std::optional<Blend>& b = config.blend ? config.blend : config.blend_per_split[i];
        MT_CHECK(sizes[i] || !b || !b->weights, "the ", split_name(static_cast<Split>(i)),
                 " split has weights but no requested size");
    }
    if (config.blend) {
        MT_CHECK(config.split.has_value(), "--split is required with --data-path");
        const Blend& blend = *config.blend;
        MT_CHECK(!blend.prefixes.empty(), "--data-path names no dataset");
        MT_CHECK(!blend.weights || blend.weights->size() == blend.prefixes.size(),
                 "--data-path: ", blend.prefixes.size(), " prefixes but ", blend.weights->size(),
                 " weights");
        const SplitMatrix matrix = *config.split_matrix();
        if (blend.prefixes.size() == 1 && !blend.weights)
            return datasets_of(build_splits(blend.prefixes[0], matrix, sizes));
        return build_blend(blend, matrix, sizes, config, build_splits);
    }
    MT_CHECK(!config.split.has_value(), "--split cannot be combined with per-split data paths");
    SplitDatasets out;
    bool any = false;
    for (int i = 0; i < kNumSplits; ++i) {
        const std::optional<Blend>& blend = config.blend_per_split[i];
        if (!blend) continue;
        any = true;
        // Each split's blend covers its whole datasets: bookend (0.0, 1.0) at its own position.
        SplitMatrix spoof;
        spoof[i] = Bookend{0.0, 1.0, false};
        SplitSizes spoof_sizes{0, 0, 0};
        spoof_sizes[i] = sizes[i];
        if (blend->prefixes.size() == 1) {  // as Megatron: a weight alone blends nothing
            out[i] = datasets_of(build_splits(blend->prefixes[0], spoof, spoof_sizes))[i];
            continue;
        }
        out[i] = build_blend(*blend, spoof, spoof_sizes, config, build_splits)[i];
    }
    MT_CHECK(any, "no data: give --data-path, per-split data paths or --mock-data");
    return out;
}

}  // namespace mt::data
