// Masked-LM predictions as Megatron's MaskedWordPieceDataset makes them
// (_create_masked_lm_predictions): which whole words / n-grams of a sample are masked and what
// replaces them, drawn from the sample's numpy RandomState in Megatron's order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "mt/api.h"
#include "mt/data/numpy_random.h"

namespace mt::data {

// The masking settings (MaskedWordPieceDatasetConfig). Megatron's permutation and longer-n-gram
// variants are not implemented: pretrain_bert.py and pretrain_t5.py turn both off.
struct MaskedLmOptions {
    double masking_probability = 0.15;
    int64_t max_ngram = 3;
    bool do_full_word = true;  // "##" pieces join the word before them
    bool geometric = false;    // n-gram lengths min(Geometric(0.2), max_ngram) (T5), else 1/n
    int64_t cls_id = 0, sep_id = 0;
    // continuation[id] != 0 when the vocabulary piece of id starts with "##".
    std::span<const uint8_t> continuation;
};

// What replaces a chosen position: a token id, or nullopt to keep the original.
using TokenMask = std::function<std::optional<int64_t>(NumpyRandomState&)>;

// One masked n-gram: its positions (ascending) and their original ids.
struct MaskedSpan {
    std::vector<int64_t> positions, labels;
};

struct MaskedLmPredictions {
    std::vector<int64_t> tokens;     // the input with the masked positions replaced
    std::vector<int64_t> positions;  // the masked positions, ascending
    std::vector<int64_t> labels;     // the original ids at `positions`
    std::vector<MaskedSpan> spans;   // the masked n-grams by their first position (T5's spans)
};

// Candidates are the words (a piece plus its "##" continuations; [CLS]/[SEP] excluded). The
// number to mask is min(p * target_length, max(1, round(len * p))). Candidates are shuffled;
// each draws an n-gram length n in 1..max_ngram with probability proportional to 1/n (or
// geometric: min(Geometric(0.2), max_ngram)), shortened
// until it fits the budget, and is skipped when it overlaps an earlier one; every position of
// an accepted n-gram calls `token_mask` in order. A final shuffle of the candidates consumes the
// same draws Megatron does.
MT_API MaskedLmPredictions create_masked_lm_predictions(std::span<const int64_t> tokens,
                                                        int64_t target_sequence_length,
                                                        NumpyRandomState& rng,
                                                        const MaskedLmOptions& options,
                                                        const TokenMask& token_mask);

// BERT's _get_token_mask: 80 % [MASK], 10 % a uniformly drawn id of `token_lookup`, 10 % keep.
MT_API std::optional<int64_t> bert_token_mask(NumpyRandomState& rng, int64_t mask_id,
                                              std::span<const int64_t> token_lookup);

}  // namespace mt::data
