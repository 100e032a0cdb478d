#include "next_token_scores.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/infer/token_log_prob.h"

namespace mt::infer {

namespace {

// The n largest of x[0, vocab) as ids, largest first, ties to the lower id.
std::vector<int32_t> top_ids(const float* x, int64_t vocab, int64_t n) {
    std::vector<int32_t> top;
    top.reserve(size_t(n) + 1);
    for (int64_t j = 0; j < vocab; ++j) {
        if (int64_t(top.size()) == n && !(x[j] > x[top.back()])) continue;
        auto at = std::upper_bound(top.begin(), top.end(), x[j],
                                   [&](float v, int32_t id) { return v > x[id]; });
        top.insert(at, int32_t(j));
        if (int64_t(top.size()) > n) top.pop_back();
    }
    return top;
}

}  // namespace

Tensor checked_logits(Tensor logits) {
    MT_CHECK(logits.dtype() == DType::f32 && logits.dim() == 3 && logits.is_contiguous(),
             "generation: the model must give contiguous f32 logits, got ", logits.describe());
    return logits;
}

std::span<float> logits_row(const Tensor& logits, int64_t b, int64_t j) {
    const int64_t n = logits.size(1), V = logits.size(2);
    return {logits.data<float>() + (b * n + j) * V, size_t(V)};
}

float next_token_log_prob(std::span<const float> x, int64_t normalised_vocab, int32_t id,
                          int64_t top_n, int64_t vocab, std::vector<TopLogProb>* top) {
    const int64_t n = int64_t(x.size());
    const LogSoftmaxRow<float> log_softmax(
        x.data(), normalised_vocab > 0 ? std::min(normalised_vocab, n) : n);
    if (top_n > 0) {
        top->clear();
        for (int32_t t : top_ids(x.data(), std::min(vocab, n), top_n))
            top->push_back({t, float(log_softmax(t))});
    }
    return float(log_softmax(id));
}

}  // namespace mt::infer
