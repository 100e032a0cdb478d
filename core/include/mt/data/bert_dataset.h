// Megatron's BERTMaskedWordPieceDataset: BERT pretraining samples ([CLS] A [SEP] B [SEP] with
// masked words and the sentence-order label) drawn sample for sample as
// megatron/core/datasets/bert_dataset.py + masked_dataset.py + helpers.cpp do, with the same
// sample-index cache files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/blend_split.h"
#include "mt/data/blended_megatron_dataset_config.h"
#include "mt/data/dataset_description.h"
#include "mt/data/indexed_dataset.h"
#include "mt/data/npy.h"
#include "mt/data/sample_dataset.h"
#include "mt/tokenizer.h"

namespace mt::data {

// BERTMaskedWordPieceDatasetConfig as pretrain_bert.py fills it. Whole-word masking is on and
// permutation, geometric spans and longer-n-gram preference are off (pretrain_bert.py fixes
// them; they are part of the cache key as such). build_mapping needs a seed in 1 .. 2^31 - 2.
struct BertDatasetConfig : BlendedMegatronDatasetConfig {
    double masking_probability = 0.15;        // --mask-prob
    double short_sequence_probability = 0.1;  // --short-seq-prob
    int64_t masking_max_ngram = 3;
    bool classification_head = true;  // not --bert-no-binary-head
    // The tokenizer: special ids, Megatron's inv_vocab as a dense id -> piece table
    // (Tokenizer::vocabulary(): the vocab file's lines, then the [BOS], [EOS] and <extra_id_N>
    // that _BertWordPieceTokenizer adds); its cache identity is the base's `tokenizer`
    // (Tokenizer::dataset_identity()). Random replacements draw from all of its ids; "##" pieces
    // continue a word.
    int64_t cls_id = 101, sep_id = 102, mask_id = 103, pad_id = 0;
    std::vector<std::string> inv_vocab;
};

// One sample, Megatron's dict: every array is int64 of length sequence_length. `types` is 0 for
// [CLS] A [SEP], 1 for B [SEP]; `labels` is -1 except at masked positions; `loss_mask` is 1 at
// masked positions. As in Megatron, `text`, `types` and `padding_mask` are padded with pad_id
// (so the padding mask is 1 on real tokens and pad_id, usually 0, after them).
struct BertSample {
    std::vector<int64_t> text, types, labels, padding_mask, loss_mask;
    int64_t is_random = 0;  // A and B were swapped (the sentence-order label)
    int64_t truncated = 0;  // A + B were cut to the target length
};

class MT_API BertMaskedWordPieceDataset : public SampleDataset {
  public:
    // Exposes documents [begin, end) of `data` (a sentence-split dataset: documents index its
    // sentences); `dataset_path` is the prefix as given (part of the cache key). num_samples
    // nullopt builds one epoch (Megatron itself cannot: its build_mapping wants an int). Loads
    // the sample index from the cache when both files exist, else builds and writes it there:
    // config.path_to_cache, or <data's prefix>/cache/BERTMaskedWordPieceDataset_indices.
    BertMaskedWordPieceDataset(std::shared_ptr<const IndexedDataset> data, std::string dataset_path,
                               int64_t begin, int64_t end, std::optional<int64_t> num_samples,
                               Split split, const BertDatasetConfig& config);

    int64_t size() const override { return sample_index_.shape()[0]; }
    BertSample get(int64_t i) const;
    Split split() const override { return split_; }
    // "text", "types", "labels", "padding_mask", "loss_mask" (i64 [B, L]), "is_random" and
    // "truncated" (i64 [B]), as Megatron's default collate stacks the dicts.
    Batch batch(std::span<const int64_t> indices) const override;

    // [size(), 3] uint32 rows (first sentence, one past the last sentence, target length).
    const NpyArray& sample_index() const { return sample_index_; }
    bool loaded_from_cache() const { return loaded_from_cache_; }

    const JsonValue& unique_identifiers() const { return unique_identifiers_; }
    const std::string& unique_description() const { return unique_description_; }
    const std::string& unique_description_hash() const { return unique_description_hash_; }
    static constexpr const char* class_name() { return "BERTMaskedWordPieceDataset"; }
    // <cache dir>/<md5>-BERTMaskedWordPieceDataset-<suffix> (no split name: the md5 has it).
    std::string cache_path(const std::string& suffix) const;

  private:
    void build_sample_index();

    std::shared_ptr<const IndexedDataset> data_;
    std::string dataset_path_;
    int64_t begin_ = 0, end_ = 0;
    std::optional<int64_t> num_samples_;
    Split split_;
    BertDatasetConfig config_;
    std::vector<uint8_t> continuation_;  // inv_vocab piece starts with "##"
    std::vector<int64_t> token_lookup_;  // list(inv_vocab.keys())
    JsonValue unique_identifiers_;
    std::string unique_description_, unique_description_hash_;
    std::string cache_dir_;
    NpyArray sample_index_;
    bool loaded_from_cache_ = false;
};

}  // namespace mt::data
