// log softmax(logits)[id] of one row of logits, with the exponentials summed in double: the
// per-token log-probs of generation and the cross-entropy of evaluation (a float sum loses about
// 1e-5 of the value on the peaked distributions of a trained model).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mt::infer {

template <class T>
double token_log_prob(const T* logits, int64_t vocab, int64_t id) {
    const T m = *std::max_element(logits, logits + vocab);
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j) sum += double(std::exp(logits[j] - m));
    return double(logits[id]) - double(m) - std::log(sum);
}

}  // namespace mt::infer
