// What a training run asks of its model family's datasets: the data flags every Megatron
// pretraining script shares (--data-path, --split, --seq-length, --seed, ...), the requested
// sample counts per split, the tokenizer, and the family's own flags (GPT's --eod-mask-loss,
// BERT's --mask-prob, ...) among the model arguments.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "mt/data/blend_split.h"
#include "mt/model.h"
#include "mt/tokenizer.h"

namespace mt::data {

struct DatasetRequest {
    uint32_t random_seed = 1234;                                   // --seed
    int64_t sequence_length = 0;                                   // --seq-length
    std::optional<Blend> blend;                                    // --data-path
    std::array<std::optional<Blend>, kNumSplits> blend_per_split;  // --{train,valid,test}-data-path
    std::optional<std::string> split;          // --split, as given (it is part of the cache key)
    std::optional<std::string> path_to_cache;  // --data-cache-path
    bool mock = false;                         // --mock-data
    // Samples per split (nullopt: one epoch), as train_valid_test_num_samples gives them.
    std::array<std::optional<int64_t>, kNumSplits> num_samples;
    const Tokenizer* tokenizer = nullptr;
    ModelArgs args;  // the model and data flags the family declared, as given
};

}  // namespace mt::data
