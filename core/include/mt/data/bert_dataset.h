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
#include "mt/data/masked_word_piece_dataset.h"

namespace mt::data {

// BERTMaskedWordPieceDatasetConfig as pretrain_bert.py fills it (n-grams of up to 3 words with
// probabilities 1/n).
struct BertDatasetConfig : MaskedWordPieceDatasetConfig {
    bool classification_head = true;  // not --bert-no-binary-head
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

class MT_API BertMaskedWordPieceDataset : public MaskedWordPieceDataset {
  public:
    // See MaskedWordPieceDataset; the default cache is
    // <data's prefix>/cache/BERTMaskedWordPieceDataset_indices.
    BertMaskedWordPieceDataset(std::shared_ptr<const IndexedDataset> data, std::string dataset_path,
                               int64_t begin, int64_t end, std::optional<int64_t> num_samples,
                               Split split, const BertDatasetConfig& config);

    BertSample get(int64_t i) const;
    // "text", "types", "labels", "padding_mask", "loss_mask" (i64 [B, L]), "is_random" and
    // "truncated" (i64 [B]), as Megatron's default collate stacks the dicts.
    Batch batch(std::span<const int64_t> indices) const override;

    static constexpr const char* class_name() { return "BERTMaskedWordPieceDataset"; }

  private:
    BertDatasetConfig config_;
};

}  // namespace mt::data
