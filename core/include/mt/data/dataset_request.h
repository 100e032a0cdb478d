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
#include "mt/data/blended_megatron_dataset_config.h"
#include "mt/model.h"
#include "mt/tokenizer.h"

namespace mt::data {

struct DatasetRequest {
    // The shared data flags (--seed, --seq-length, --data-path or per-split paths, --split,
    // --data-cache-path) and the tokenizer's cache identity, as every family's config holds
    // them (its own config derives from BlendedMegatronDatasetConfig).
    BlendedMegatronDatasetConfig config;
    bool mock = false;  // --mock-data
    // Samples per split (nullopt: one epoch), as train_valid_test_num_samples gives them.
    std::array<std::optional<int64_t>, kNumSplits> num_samples;
    const Tokenizer* tokenizer = nullptr;
    ModelArgs args;  // the model and data flags the family declared, as given
    // --dataloader-type cyclic: the samples are read epoch after epoch, and Megatron's data
    // loader starts each epoch's iterator anew (its workers' turns from worker 0 again).
    bool cyclic_loader = false;
};

}  // namespace mt::data
