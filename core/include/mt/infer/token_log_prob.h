// log softmax(logits)[id] of one row of logits, with the exponentials summed in double: the
// per-token log-probs of generation and the cross-entropy of evaluation (a float sum loses about
// 1e-5 of the value on the peaked distributions of a trained model).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mt::infer {

// The row's normaliser computed once, for reading the log-probs of several ids; every one comes
// out of the same expression, so a token's log-prob and the same id among the top ones are equal
// to the bit (clients judge "greedy" by comparing them).
template <class T>
class LogSoftmaxRow {
  public:
    LogSoftmaxRow(const T* logits, int64_t vocab)
        : logits_(logits), max_(*std::max_element(logits, logits + vocab)) {
        double sum = 0;
        for (int64_t j = 0; j < vocab; ++j) sum += double(std::exp(logits[j] - max_));
        log_sum_ = std::log(sum);
    }
    double operator()(int64_t id) const { return double(logits_[id]) - double(max_) - log_sum_; }

  private:
    const T* logits_;
    T max_;
    double log_sum_ = 0;
};

template <class T>
double token_log_prob(const T* logits, int64_t vocab, int64_t id) {
    return LogSoftmaxRow<T>(logits, vocab)(id);
}

}  // namespace mt::infer
