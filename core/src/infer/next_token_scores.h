// What generation reads off logits besides the sample: their rows, the log-prob of the token
// that follows and the most likely tokens there, shared by the static loop (generator.cpp) and
// continuous batching (continuous_batch.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mt/infer/generator.h"
#include "mt/tensor.h"

namespace mt::infer {

// A model's logits as generation reads them: contiguous f32 [B, n, V], else mt::Error.
Tensor checked_logits(Tensor logits);
// One row of such logits, at (b, j).
std::span<float> logits_row(const Tensor& logits, int64_t b, int64_t j);

// log p(id) under the row x (normalised over its first `normalised_vocab` entries; 0: all of
// them) and, with top_n > 0, the top_n most likely ids below `vocab` into *top, most likely
// first (ties: the lower id).
float next_token_log_prob(std::span<const float> x, int64_t normalised_vocab, int32_t id,
                          int64_t top_n, int64_t vocab, std::vector<TopLogProb>* top);

}  // namespace mt::infer
