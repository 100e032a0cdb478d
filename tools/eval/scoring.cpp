#include "scoring.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "mt/error.h"
#include "mt/infer/token_log_prob.h"

namespace mt::eval {

namespace {

template <class T>
int64_t count_correct(const Tensor& logits, std::span<const int64_t> labels,
                      std::span<const uint8_t> mask) {
    const int64_t B = logits.size(0), n = logits.size(1), V = logits.size(2);
    const T* data = logits.data<T>();
    int64_t correct = 0;
    for (int64_t b = 0; b < B; ++b) {
        bool right = true;
        for (int64_t i = 0; i < n && right; ++i) {
            const int64_t row = b * n + i;
            if (!mask[size_t(row)]) continue;
            const T* v = data + row * V;
            right = std::max_element(v, v + V) - v == labels[size_t(row)];
        }
        correct += right;
    }
    return correct;
}

template <class T>
double masked_loss(const Tensor& logits, std::span<const int64_t> labels,
                   std::span<const uint8_t> mask) {
    const int64_t rows = logits.size(0) * logits.size(1), V = logits.size(2);
    const T* data = logits.data<T>();
    for (int64_t r = 0; r < rows; ++r)
        MT_CHECK(!mask[size_t(r)] || (labels[size_t(r)] >= 0 && labels[size_t(r)] < V),
                 "scoring: label ", labels[size_t(r)], " is not in [0, ", V, ")");
    double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
        if (mask[size_t(r)]) sum -= infer::token_log_prob(data + r * V, V, labels[size_t(r)]);
    return sum;
}

}  // namespace

double score_logits(const Tensor& logits, std::span<const int64_t> labels,
                    std::span<const uint8_t> mask, Metric metric) {
    MT_CHECK(logits.dim() == 3 && (logits.dtype() == DType::f32 || logits.dtype() == DType::f64),
             "scoring needs f32 or f64 logits [B, n, V], got ", logits.describe());
    const int64_t B = logits.size(0), n = logits.size(1);
    MT_CHECK(int64_t(labels.size()) == B * n && int64_t(mask.size()) == B * n,
             "scoring: ", labels.size(), " labels and ", mask.size(), " mask entries for logits ",
             logits.describe());
    const Tensor c = logits.contiguous();
    const bool f32 = c.dtype() == DType::f32;
    if (metric == Metric::accuracy)
        return double(f32 ? count_correct<float>(c, labels, mask)
                          : count_correct<double>(c, labels, mask));
    return f32 ? masked_loss<float>(c, labels, mask) : masked_loss<double>(c, labels, mask);
}

namespace {

// The scored positions of `rows`: [first, end), empty (end 0) when none is.
std::pair<int64_t, int64_t> scored_span(std::span<const ScoredSequence> rows) {
    int64_t first = std::numeric_limits<int64_t>::max(), end = 0;
    for (const auto& s : rows)
        for (int64_t i = 0; i < int64_t(s.mask.size()); ++i)
            if (s.mask[size_t(i)]) {
                first = std::min(first, i);
                end = std::max(end, i + 1);
            }
    return {end == 0 ? 0 : first, end};
}

double score_rows(Model& model, std::span<const ScoredSequence> rows, Metric metric) {
    const auto [first, end] = scored_span(rows);
    if (end == 0) return metric == Metric::accuracy ? double(rows.size()) : 0.0;
    const int64_t B = int64_t(rows.size()), keep = end - first;
    Tensor tokens = Tensor::empty({B, end}, DType::i64);
    std::vector<int64_t> labels(size_t(B * keep));
    std::vector<uint8_t> mask(size_t(B * keep));
    for (int64_t b = 0; b < B; ++b) {
        const auto& s = rows[size_t(b)];
        std::copy_n(s.tokens.begin(), end, tokens.data<int64_t>() + b * end);
        std::copy_n(s.tokens.begin() + first + 1, keep, labels.begin() + b * keep);
        std::copy_n(s.mask.begin() + first, keep, mask.begin() + b * keep);
    }
    return score_logits(model.logits(tokens, nullptr, keep), labels, mask, metric);
}

}  // namespace

double score_batch(Model& model, std::span<const ScoredSequence> batch, Metric metric) {
    for (const auto& s : batch)
        MT_CHECK(s.tokens.size() == s.mask.size() + 1 && s.mask.size() == batch[0].mask.size(),
                 "scoring: the sequences of a batch must have the same length");
    double total = 0;
    size_t begin = 0;
    while (begin < batch.size()) {
        // Grow the group while its logits stay within kMaxScoredPositions (one row at least).
        size_t end = begin + 1;
        while (end < batch.size()) {
            const auto [first, last] = scored_span(batch.subspan(begin, end + 1 - begin));
            if (int64_t(end + 1 - begin) * (last - first) > kMaxScoredPositions) break;
            ++end;
        }
        total += score_rows(model, batch.subspan(begin, end - begin), metric);
        begin = end;
    }
    return total;
}

double evaluate(Model& model, int64_t count, const std::function<ScoredSequence(int64_t)>& item,
                int64_t micro_batch_size, Metric metric,
                const std::function<void(int64_t, int64_t)>& on_batch) {
    MT_CHECK(micro_batch_size > 0, "--micro-batch-size must be positive, got ", micro_batch_size);
    double total = 0;
    std::vector<ScoredSequence> batch;
    for (int64_t start = 0, done = 0; start < count; start += micro_batch_size) {
        batch.clear();
        for (int64_t i = start; i < std::min(count, start + micro_batch_size); ++i)
            batch.push_back(item(i));
        total += score_batch(model, batch, metric);
        on_batch(++done, start + int64_t(batch.size()));
    }
    return total;
}

}  // namespace mt::eval
