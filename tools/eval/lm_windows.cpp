#include "lm_windows.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::eval {

LmWindows::LmWindows(std::span<const int32_t> tokens, int64_t seq_length, int32_t pad_id,
                     int64_t overlapping_eval)
    : tokens_(tokens),
      seq_length_(seq_length),
      overlap_(std::max<int64_t>(1, overlapping_eval)),
      pad_id_(pad_id) {
    MT_CHECK(seq_length > 0, "--seq-length must be positive, got ", seq_length);
    const int64_t targets = std::max<int64_t>(int64_t(tokens.size()) - 1 - overlap_, 0);
    count_ = std::max<int64_t>((targets + overlap_ - 1) / overlap_ + 1, 1);
}

ScoredSequence LmWindows::window(int64_t index) const {
    MT_CHECK(index >= 0 && index < count_, "window ", index, " is not in [0, ", count_, ")");
    const int64_t start = index * overlap_;
    const int64_t n = std::clamp<int64_t>(int64_t(tokens_.size()) - start, 0, seq_length_ + 1);
    ScoredSequence w;
    w.tokens.assign(size_t(seq_length_ + 1), pad_id_);
    if (n > 0) std::copy_n(tokens_.begin() + start, n, w.tokens.begin());
    // pad_mask[1:] of [1] * n + [0] * pad, then for later windows only the last overlap kept.
    w.mask.assign(size_t(seq_length_), 0);
    const int64_t first =
        index == 0 || overlap_ == seq_length_ ? 0 : std::max<int64_t>(seq_length_ - overlap_, 0);
    for (int64_t i = first; i < n - 1; ++i) w.mask[size_t(i)] = 1;
    return w;
}

}  // namespace mt::eval
