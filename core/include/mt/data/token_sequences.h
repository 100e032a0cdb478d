// The low-level dataset a GPTDataset samples from: numbered sequences of token ids (Megatron's
// IndexedDataset over .bin/.idx, or the generated sequences of its mock data).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::data {

class MT_API TokenSequences {
  public:
    virtual ~TokenSequences() = default;
    virtual int64_t num_sequences() const = 0;
    virtual int32_t sequence_length(int64_t i) const = 0;
    // Tokens [offset, offset + length) of sequence i widened to int64 (length -1: to the end).
    virtual std::vector<int64_t> get(int64_t i, int64_t offset = 0, int64_t length = -1) const = 0;
};

}  // namespace mt::data
