// What Megatron's masked datasets share (masked_dataset.py's MaskedWordPieceDataset, the base of
// BERT's and T5's): a document window of a sentence-split corpus, the vocabulary's word pieces,
// the cache identity and the sample index of sentence runs (helpers.cpp build_mapping) that each
// sample draws from with its own numpy RandomState.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/data/blend_split.h"
#include "mt/data/blended_megatron_dataset_config.h"
#include "mt/data/dataset_description.h"
#include "mt/data/indexed_dataset.h"
#include "mt/data/masked_lm.h"
#include "mt/data/npy.h"
#include "mt/data/numpy_random.h"
#include "mt/data/sample_dataset.h"

namespace mt::data {

// MaskedWordPieceDatasetConfig. Whole-word masking is on and permutation and the longer-n-gram
// preference are off (pretrain_bert.py and pretrain_t5.py fix them; they are part of the cache
// key as such). build_mapping needs a seed in 1 .. 2^31 - 2.
struct MaskedWordPieceDatasetConfig : BlendedMegatronDatasetConfig {
    double masking_probability = 0.15;        // --mask-prob
    double short_sequence_probability = 0.1;  // --short-seq-prob
    int64_t masking_max_ngram = 3;
    bool masking_use_geometric_distribution = false;  // span lengths Geometric(0.2) (T5)
    // The tokenizer: special ids, Megatron's inv_vocab as a dense id -> piece table
    // (Tokenizer::vocabulary(): the vocab file's lines, then the [BOS], [EOS] and <extra_id_N>
    // that _BertWordPieceTokenizer adds); its cache identity is the base's `tokenizer`
    // (Tokenizer::dataset_identity()). "##" pieces continue a word.
    int64_t cls_id = 101, sep_id = 102, mask_id = 103, pad_id = 0;
    std::vector<std::string> inv_vocab;
};

class MT_API MaskedWordPieceDataset : public SampleDataset {
  public:
    int64_t size() const override { return sample_index_.shape()[0]; }
    Split split() const override { return split_; }

    // [size(), 3] uint32 rows (first sentence, one past the last sentence, target length).
    const NpyArray& sample_index() const { return sample_index_; }
    bool loaded_from_cache() const { return loaded_from_cache_; }

    const JsonValue& unique_identifiers() const { return unique_identifiers_; }
    const std::string& unique_description() const { return unique_description_; }
    const std::string& unique_description_hash() const { return unique_description_hash_; }
    // <cache dir>/<md5>-<class>-<suffix> (no split name: the md5 has it).
    std::string cache_path(const std::string& suffix) const;

  protected:
    // Exposes documents [begin, end) of `data` (a sentence-split dataset: documents index its
    // sentences) as Megatron's `class_name`; `dataset_path` is the prefix as given (part of the
    // cache key), `extra_identifiers` the subclass's key config attributes after the masked
    // base's. num_samples nullopt builds one epoch (Megatron itself cannot: its build_mapping
    // wants an int). Loads the sample index from the cache when both files exist, else builds
    // it (targets of sequence_length - reserved_tokens, runs of at least min_sentences) and
    // writes it there: config.path_to_cache, or <data's prefix>/cache/<class>_indices.
    MaskedWordPieceDataset(const char* class_name, std::shared_ptr<const IndexedDataset> data,
                           std::string dataset_path, int64_t begin, int64_t end,
                           std::optional<int64_t> num_samples, Split split,
                           const MaskedWordPieceDatasetConfig& config,
                           const std::vector<std::pair<std::string, JsonValue>>& extra_identifiers,
                           int64_t reserved_tokens, int32_t min_sentences);

    // Sample i's row of the sample index, checked against the corpus.
    struct SampleRow {
        int64_t first, last, target;
    };
    SampleRow row(int64_t i) const;
    // Sample i's RandomState(seed + i), as __getitem__ makes it.
    NumpyRandomState random_state(int64_t i) const;
    // The masking settings for _create_masked_lm_predictions.
    MaskedLmOptions masking_options() const;
    const IndexedDataset& corpus() const { return *data_; }
    // list(inv_vocab.keys()): every id.
    std::span<const int64_t> token_lookup() const { return token_lookup_; }
    // Megatron's class name ("T5MaskedWordPieceDataset"), for messages.
    const char* dataset_class() const { return class_name_; }

  private:
    void build_sample_index(int64_t reserved_tokens, int32_t min_sentences);

    const char* class_name_;
    std::shared_ptr<const IndexedDataset> data_;
    std::string dataset_path_;
    int64_t begin_ = 0, end_ = 0;
    std::optional<int64_t> num_samples_;
    Split split_;
    MaskedWordPieceDatasetConfig masked_;
    std::vector<uint8_t> continuation_;  // inv_vocab piece starts with "##"
    std::vector<int64_t> token_lookup_;  // list(inv_vocab.keys())
    JsonValue unique_identifiers_;
    std::string unique_description_, unique_description_hash_;
    std::string cache_dir_;
    NpyArray sample_index_;
    bool loaded_from_cache_ = false;
};

}  // namespace mt::data
