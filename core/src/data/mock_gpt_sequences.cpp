#include "mt/data/mock_gpt_sequences.h"

#include <algorithm>

#include "mt/data/numpy_generator.h"
#include "mt/error.h"

namespace mt::data {

MockGptSequences::MockGptSequences(int64_t eod, int64_t vocab_size)
    : lengths_(NumpyGenerator(0).integers_int32(1, kMaxLength, kSequences)),
      eod_(eod),
      vocab_size_(vocab_size) {
    MT_CHECK(vocab_size >= 0, "mock data: vocabulary size ", vocab_size);
}

int32_t MockGptSequences::sequence_length(int64_t i) const {
    MT_CHECK(i >= 0 && i < kSequences, "mock data: sequence ", i, " outside [0, ", kSequences, ")");
    return lengths_[size_t(i)];
}

std::vector<int64_t> MockGptSequences::get(int64_t i, int64_t offset, int64_t length) const {
    const int64_t n = sequence_length(i);
    MT_CHECK(offset >= 0 && length >= -1, "mock data: bad range offset ", offset, " length ",
             length);
    const int64_t end = length < 0 ? n : std::min(n, offset + length);
    std::vector<int64_t> out;
    for (int64_t t = offset; t < end; ++t)
        out.push_back(t + 1 < n ? (vocab_size_ > 0 ? (t + 1) % vocab_size_ : t + 1) : eod_);
    return out;
}

}  // namespace mt::data
