// The sample index of Megatron's masked-LM datasets (BERT, T5): which run of consecutive
// sentences of a document makes each sample, and its target length, exactly as
// megatron/core/datasets/helpers.cpp build_mapping draws them.
#pragma once

#include <cstdint>
#include <span>

#include "mt/api.h"
#include "mt/data/npy.h"

namespace mt::data {

// Sentences longer than this (tokens) disqualify their whole document (helpers.cpp).
constexpr int32_t kLongSentenceLength = 512;

// build_mapping: `document_boundaries` holds the sentence index where each document of the
// split starts, plus one past the last (Megatron passes document_indices[begin .. end]);
// `sizes` are the token counts of every sentence of the dataset. For up to `num_epochs` epochs,
// stopping before an epoch once `max_num_samples` are reached (so it can overshoot), every
// document with at least `min_num_sentences` sentences and none longer than 512 tokens is cut
// into runs of sentences that reach a target length (max_seq_length, or with probability
// 1/round(1/short_seq_prob) a shorter one drawn from std::mt19937(seed)). The rows
// (first sentence, one past the last sentence, target length) are then shuffled with
// std::mt19937_64(seed + 1). Returns a uint32 [num_samples, 3] array; an mt::Error when the
// dataset has more than 2^32 - 1 sentences (Megatron switches to uint64 there) or when an epoch
// yields no sample although more are wanted (Megatron would loop through ~2^31 empty epochs).
MT_API NpyArray build_bert_sample_mapping(std::span<const int64_t> document_boundaries,
                                          std::span<const int32_t> sizes, int32_t num_epochs,
                                          uint64_t max_num_samples, int32_t max_seq_length,
                                          double short_seq_prob, int32_t seed,
                                          int32_t min_num_sentences);

}  // namespace mt::data
