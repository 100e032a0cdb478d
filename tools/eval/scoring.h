// Scoring a batch of sequences with a model as Megatron's zero-shot forward_step does: the
// masked cross-entropy sum (WIKITEXT103) or the number of sequences whose every scored
// position the argmax predicts (LAMBADA).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mt/model.h"

namespace mt::eval {

// seq_length + 1 tokens: the model reads tokens[0..L-1]; mask[i] = 1 when its prediction at
// position i (of tokens[i + 1]) counts.
struct ScoredSequence {
    std::vector<int32_t> tokens;
    std::vector<uint8_t> mask;
};

enum class Metric { loss, accuracy };

// Megatron runs every sequence at full length; causal attention makes the unscored tail
// irrelevant, so the batch is cut after its last scored position and only the logits from its
// first scored position on are computed (in groups of rows that keep the logits to about
// kMaxScoredPositions positions). Returns the loss sum (Metric::loss, over the padded
// vocabulary, exponentials summed in double: Megatron's float32 sum is ~1e-5 off) or the count of
// sequences predicted right (Metric::accuracy: argmax over the padded vocabulary, first maximum on
// ties; a sequence with nothing scored counts as right). All sequences of a batch must have the
// same length.
double score_batch(Model& model, std::span<const ScoredSequence> batch, Metric metric);
inline constexpr int64_t kMaxScoredPositions = 2048;

// Megatron's evaluate(): items 0 .. count - 1 in micro-batches, in order, the scores summed;
// on_batch(batches done, items done) after each.
double evaluate(Model& model, int64_t count, const std::function<ScoredSequence(int64_t)>& item,
                int64_t micro_batch_size, Metric metric,
                const std::function<void(int64_t, int64_t)>& on_batch);

// The same from logits f32/f64 [B, n, V] of the last n positions and labels [B, n] (row-major
// ids and masks of those positions).
double score_logits(const Tensor& logits, std::span<const int64_t> labels,
                    std::span<const uint8_t> mask, Metric metric);

}  // namespace mt::eval
