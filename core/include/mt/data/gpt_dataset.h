// Megatron's GPTDataset: the document, sample and shuffle indices that fix the training sample
// order (bit-identical to megatron/core/datasets/gpt_dataset.py + helpers.cpp) and sample reads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/data/blend_split.h"
#include "mt/data/blended_megatron_dataset_config.h"
#include "mt/data/dataset_description.h"
#include "mt/data/indexed_dataset.h"
#include "mt/data/npy.h"
#include "mt/data/numpy_random.h"
#include "mt/data/sample_dataset.h"
#include "mt/data/token_sequences.h"
#include "mt/tokenizer.h"

namespace mt::data {

using mt::TokenizerIdentity;  // the tokenizer's part of the cache key (mt/tokenizer.h)

// GPTDatasetConfig with pretrain_gpt.py's defaults.
struct GPTDatasetConfig : BlendedMegatronDatasetConfig {
    bool reset_position_ids = false;
    bool reset_attention_mask = false;
    bool eod_mask_loss = false;
    bool create_attention_mask = true;
    bool drop_last_partial_validation_sequence = true;
    bool add_extra_token_to_sequence = true;
    // --mock-data: Megatron's MockGPTDataset over generated sequences (no blend; the split is
    // then "1,1,1" whatever --split says, and indices are cached only under --data-cache-path).
    bool mock = false;
    // --fim-data: the indices of Megatron's GPTFIMDataset (its class name in the cache's names;
    // the samples are permuted by mt/data/gpt_fim_dataset.h).
    bool fim = false;
    int64_t eod_id = 0;  // tokenizer.eod
    // tokenizer.vocab_size: core_v0.19's mock tokens are taken modulo it (core_v0.13's, below
    // 4096, only fit a vocabulary that large; 0: not taken).
    int64_t vocab_size = 0;
    int64_t pad_id = -1;  // tokenizer.pad, or -1 when the tokenizer has none
};

// One sample: `tokens`/`labels` of length L (labels are tokens shifted by one). Instead of the
// [L, L] mask, `document_start[q]` is the first position token q may attend to: 0 everywhere
// unless reset_attention_mask, then one past the last EOD before q.
struct GPTSample {
    std::vector<int64_t> tokens;          // [L]
    std::vector<int64_t> labels;          // [L]
    std::vector<float> loss_mask;         // [L]
    std::vector<int64_t> position_ids;    // [L]
    std::vector<int32_t> document_start;  // [L]
};

// Megatron's boolean attention_mask [L, L] (row-major, 1 = masked): q may see k iff
// document_start[q] <= k <= q.
MT_API std::vector<uint8_t> materialize_attention_mask(const GPTSample& sample);

// What GPT training reads (a GPTDataset, or a stand-in in tests). Its micro-batches hold
// "tokens", "labels" (i64 [B, L]), "loss_mask" (f32 [B, L]), "position_ids" (i64 [B, L]) and
// "document_start" (i32 [B, L]).
class MT_API GPTSampleDataset : public SampleDataset {
  public:
    virtual GPTSample get(int64_t i) const = 0;
    Batch batch(std::span<const int64_t> indices) const override;
};

// ---- index builders (exposed for tests and benchmarks) ----

// _build_document_index: ids [begin, end) repeated num_epochs times, int32, shuffled as one
// array; with separate_final_epoch the first num_epochs-1 epochs and the last are shuffled apart.
MT_API NpyArray build_document_index(int64_t begin, int64_t end, int64_t num_epochs,
                                     NumpyRandomState& rng, bool separate_final_epoch);
// helpers.cpp build_sample_idx: [num_samples + 1, 2] rows (document-index position, offset);
// int32 when max(len(document_index), max(sizes)) fits, else int64.
MT_API NpyArray build_sample_index(const std::vector<int32_t>& sizes,
                                   const NpyArray& document_index, int32_t sequence_length,
                                   int32_t num_epochs, int64_t tokens_per_epoch,
                                   bool drop_last_partial_sequence, int32_t add_extra_token);
// _build_shuffle_index: [0, num_samples) shuffled, then [num_samples, total_size) shuffled apart;
// uint32 unless total_size >= 2^32 - 2, then int64.
MT_API NpyArray build_shuffle_index(int64_t num_samples, int64_t total_size, NumpyRandomState& rng);

class MT_API GPTDataset : public GPTSampleDataset {
  public:
    // Exposes sequences [begin, end) of `data` (the split's range); num_samples nullopt = one
    // epoch. Loads the indices from the cache when all four files exist, else builds and writes
    // them there (Megatron's default cache is <dataset_path>/cache/GPTDataset_indices; mock data,
    // which has no dataset_path, is cached only under config.path_to_cache).
    GPTDataset(std::shared_ptr<const TokenSequences> data, std::optional<std::string> dataset_path,
               int64_t begin, int64_t end, std::optional<int64_t> num_samples, Split split,
               const GPTDatasetConfig& config);

    int64_t size() const override { return sample_index_.shape()[0] - 1; }
    GPTSample get(int64_t i) const override;
    Split split() const override { return split_; }
    // The L + E raw token ids of sample i (padded with pad_id when short), as Megatron reads them.
    std::vector<int64_t> text(int64_t i) const;
    // The same before the padding (short only for a partial last sample), and the padding.
    std::vector<int64_t> read(int64_t i) const;
    std::vector<int64_t> padded(std::vector<int64_t> ids) const;
    // GPTDataset.__getitem__ past the read: tokens, labels, masks and positions of L + E ids.
    GPTSample sample_of(const std::vector<int64_t>& raw) const;

    const NpyArray& document_index() const { return document_index_; }
    const NpyArray& sample_index() const { return sample_index_; }
    const NpyArray& shuffle_index() const { return shuffle_index_; }
    // How the indices were built (0 / false when they were loaded from the cache).
    int64_t num_epochs() const { return num_epochs_; }
    bool separate_final_epoch() const { return separate_final_epoch_; }
    bool loaded_from_cache() const { return loaded_from_cache_; }

    const JsonValue& unique_identifiers() const { return unique_identifiers_; }
    const std::string& unique_description() const { return unique_description_; }
    const std::string& unique_description_hash() const { return unique_description_hash_; }
    // "GPTDataset", or "MockGPTDataset" over mock data: Megatron's class name, which is part of
    // the description and of the cache file names.
    const char* class_name() const {
        return config_.mock ? "MockGPTDataset" : config_.fim ? "GPTFIMDataset" : "GPTDataset";
    }
    const GPTDatasetConfig& config() const { return config_; }
    // <cache dir>/<md5>-<class name>-<split>-<suffix>; empty when the indices are not cached.
    std::string cache_path(const std::string& suffix) const;

  private:
    void build_indices();

    std::shared_ptr<const TokenSequences> data_;
    std::optional<std::string> dataset_path_;
    int64_t begin_ = 0, end_ = 0;
    std::optional<int64_t> num_samples_;
    Split split_;
    GPTDatasetConfig config_;
    JsonValue unique_identifiers_;
    std::string unique_description_, unique_description_hash_;
    std::optional<std::string> cache_dir_;
    NpyArray document_index_, sample_index_, shuffle_index_;
    int64_t num_epochs_ = 0;
    bool separate_final_epoch_ = false;
    bool loaded_from_cache_ = false;
};

// _get_num_epochs: the smallest e >= 1 with e * tokens_per_epoch >= num_samples * L + E.
MT_API int64_t gpt_num_epochs(int64_t tokens_per_epoch, std::optional<int64_t> num_samples,
                              int64_t sequence_length, int64_t add_extra_token);
// Whether the last epoch is shuffled on its own (the 80 % rule); also returns the sample count
// before the last epoch.
MT_API std::pair<bool, int64_t> gpt_separate_final_epoch(int64_t num_epochs,
                                                         int64_t tokens_per_epoch,
                                                         int64_t num_samples,
                                                         int64_t sequence_length,
                                                         int64_t add_extra_token);

}  // namespace mt::data
