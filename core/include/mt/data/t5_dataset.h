// Megatron's T5MaskedWordPieceDataset: span-corruption samples (each masked n-gram of whole words
// replaced by one sentinel in the encoder input; the decoder reads [BOS] and each sentinel with
// its words, and predicts them followed by [EOS]) drawn sample for sample as
// megatron/core/datasets/t5_dataset.py on masked_dataset.py's base does, with the same
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

// T5MaskedWordPieceDatasetConfig as pretrain_t5.py fills it: n-grams of up to 10 whole words,
// span lengths Geometric(0.2), every masked word replaced by [MASK] (which the encoder never
// sees: its span is one sentinel there).
struct T5DatasetConfig : MaskedWordPieceDatasetConfig {
    T5DatasetConfig() {
        masking_max_ngram = 10;
        masking_use_geometric_distribution = true;
    }
    int64_t sequence_length_decoder = 0;  // --decoder-seq-length
    // The tokenizer's [BOS] and [EOS] and its additional_special_tokens_ids: the <extra_id_N>
    // sentinels in order (--vocab-extra-ids of them); a sample uses one per span.
    int64_t bos_id = 0, eos_id = 0;
    std::vector<int64_t> sentinel_ids;
};

// One sample, Megatron's dict: int64 arrays, the encoder's of sequence_length, the decoder's of
// sequence_length_decoder. text_enc and text_dec are padded with pad_id, labels with -1;
// enc_mask / dec_mask are 1 on the tokens and 0 on the padding; loss_mask is dec_mask.
struct T5Sample {
    std::vector<int64_t> text_enc, text_dec, labels, loss_mask, enc_mask, dec_mask;
    int64_t truncated = 0;  // the sentences were cut to the target length
};

class MT_API T5MaskedWordPieceDataset : public MaskedWordPieceDataset {
  public:
    // See MaskedWordPieceDataset; the default cache is
    // <data's prefix>/cache/T5MaskedWordPieceDataset_indices.
    T5MaskedWordPieceDataset(std::shared_ptr<const IndexedDataset> data, std::string dataset_path,
                             int64_t begin, int64_t end, std::optional<int64_t> num_samples,
                             Split split, const T5DatasetConfig& config);

    // mt::Error naming the sample when its spans need more sentinels than the tokenizer has or
    // the decoder's sequence is too short for them (Megatron's own asserts).
    T5Sample get(int64_t i) const;
    // "text_enc", "enc_mask" (i64 [B, Le]), "text_dec", "labels", "loss_mask", "dec_mask"
    // (i64 [B, Ld]) and "truncated" (i64 [B]), as Megatron's default collate stacks the dicts.
    Batch batch(std::span<const int64_t> indices) const override;

    static constexpr const char* class_name() { return "T5MaskedWordPieceDataset"; }

  private:
    T5DatasetConfig config_;
};

}  // namespace mt::data
