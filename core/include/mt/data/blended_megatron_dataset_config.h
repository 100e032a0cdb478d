// BlendedMegatronDatasetConfig: what every Megatron dataset config holds (GPT's and BERT's derive
// from it), the seed, the sequence length, the blend or per-split blends, the split, the cache
// and the tokenizer's cache identity.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "mt/data/blend_split.h"
#include "mt/tokenizer.h"

namespace mt::data {

struct BlendedMegatronDatasetConfig {
    uint32_t random_seed = 1234;                                   // --seed
    int64_t sequence_length = 0;                                   // --seq-length
    std::optional<Blend> blend;                                    // --data-path
    std::array<std::optional<Blend>, kNumSplits> blend_per_split;  // --{train,valid,test}-data-path
    std::optional<std::string> split;          // --split, as given (it is part of the cache key)
    std::optional<std::string> path_to_cache;  // --data-cache-path
    double mid_level_dataset_surplus = 0.005;  // --mid-level-dataset-surplus
    TokenizerIdentity tokenizer;               // the tokenizer's part of the cache key

    // The split matrix Megatron derives from `split` (absent with blend_per_split).
    std::optional<SplitMatrix> split_matrix() const {
        if (!split) return std::nullopt;
        return convert_split_vector_to_split_matrix(parse_and_normalize_split(*split));
    }
};

}  // namespace mt::data
