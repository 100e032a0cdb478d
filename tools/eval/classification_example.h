// The examples of Megatron's finetuning classification tasks (RACE, MNLI, QQP): token rows
// "[CLS] a [SEP] b [SEP]" with their token types and padding masks, as tasks/data_utils.py
// builds them (build_tokens_types_paddings_from_ids / _from_text, build_sample).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "mt/tokenizer.h"

namespace mt::eval {

// One model input row, each vector max_seq_length long.
struct ClassificationRow {
    std::vector<int32_t> ids;       // Megatron's 'text'
    std::vector<int32_t> types;     // 0 for [CLS] a [SEP], 1 for b [SEP], the pad id on padding
    std::vector<int32_t> paddings;  // Megatron's 'padding_mask': 1 on tokens, 0 on padding
};

struct ClassificationExample {
    int64_t uid = 0;  // Megatron's 'uid': the TSV's id column, or RACE's question counter
    int32_t label = 0;
    // One row per choice: RACE has 4 (its sample_multiplier), MNLI and QQP one.
    std::vector<ClassificationRow> rows;
};

// [CLS] a [SEP] (b [SEP] when b is given); a sequence that reaches max_seq_length is cut to
// max_seq_length - 1 tokens and closed with [SEP] (type 1 when b is given, else 0); the rest
// is padding: ids and types `pad`, paddings 0. mt::Error when max_seq_length < 1.
ClassificationRow build_tokens_types_paddings(std::span<const int32_t> a,
                                              std::optional<std::span<const int32_t>> b,
                                              int64_t max_seq_length, int32_t cls, int32_t sep,
                                              int32_t pad);

// The same on tokenize(a) and tokenize(b), with the tokenizer's [CLS], [SEP] and pad ids
// (mt::Error naming the tokenizer when it lacks one).
ClassificationRow build_tokens_types_paddings_from_text(std::string_view a,
                                                        std::optional<std::string_view> b,
                                                        const Tokenizer& tokenizer,
                                                        int64_t max_seq_length);

// The tokenizer's cls, sep and pad ids, or mt::Error naming the tokenizer and the missing one.
struct ClassificationSpecialIds {
    int32_t cls, sep, pad;
};
ClassificationSpecialIds classification_special_ids(const Tokenizer& tokenizer);

}  // namespace mt::eval
