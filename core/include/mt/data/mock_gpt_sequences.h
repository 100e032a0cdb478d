// Megatron's MockGPTLowLevelDataset (--mock-data): 100000 sequences whose lengths are
// numpy.random.default_rng(0).integers(1, 4096, int32) and whose tokens are 1, 2, ..., n - 1
// followed by the tokenizer's end-of-document id; core_v0.19 takes the tokens modulo the
// tokenizer's vocabulary size (a smaller vocabulary than 4096 failed in core_v0.13, a larger
// one sees the same tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/data/token_sequences.h"

namespace mt::data {

class MT_API MockGptSequences : public TokenSequences {
  public:
    static constexpr int64_t kSequences = 100000;
    static constexpr int32_t kMaxLength = 4096;  // exclusive

    // `vocab_size` 0: tokens not taken modulo a vocabulary size.
    MockGptSequences(int64_t eod, int64_t vocab_size);

    int64_t num_sequences() const override { return kSequences; }
    int32_t sequence_length(int64_t i) const override;
    // As numpy slices it: a range past the end is cut short.
    std::vector<int64_t> get(int64_t i, int64_t offset = 0, int64_t length = -1) const override;

  private:
    std::vector<int32_t> lengths_;
    int64_t eod_, vocab_size_;
};

}  // namespace mt::data
