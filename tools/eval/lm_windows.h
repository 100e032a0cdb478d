// The WIKITEXT103 evaluation windows (Megatron's _LMDataset): overlapping windows of
// seq_length + 1 tokens every `overlapping_eval` tokens; with overlapping_eval <= seq_length
// every token is scored once, with at least seq_length - overlapping_eval tokens of context.
#pragma once

#include <cstdint>
#include <span>

#include "scoring.h"

namespace mt::eval {

class LmWindows {
  public:
    // overlapping_eval < 1 counts as 1, as in Megatron.
    LmWindows(std::span<const int32_t> tokens, int64_t seq_length, int32_t pad_id,
              int64_t overlapping_eval);

    int64_t size() const { return count_; }
    int64_t seq_length() const { return seq_length_; }
    // Window `index`: seq_length + 1 tokens padded with the pad id; scored are the real labels,
    // and in every window but the first only those among the last `overlapping_eval`.
    ScoredSequence window(int64_t index) const;

  private:
    std::span<const int32_t> tokens_;
    int64_t seq_length_, overlap_, count_;
    int32_t pad_id_;
};

}  // namespace mt::eval
