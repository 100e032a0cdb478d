// Megatron's sample(): greedy argmax, or tempered logits filtered by top-k or top-p, then a
// multinomial draw from their softmax. Probabilities are summed in double.
#include "mt/infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "mt/error.h"
#include "mt/kernels/rng.h"

namespace mt::infer {

double SamplingRng::uniform() {
    const uint64_t block = counter_++;
    k::Philox4 w = k::philox4x32_10(
        k::Philox4{{uint32_t(block), uint32_t(block >> 32), 0x5eedu, 0u}}, uint32_t(seed_),
        uint32_t(seed_ >> 32));
    // 53 random bits.
    const uint64_t bits = (uint64_t(w.v[0]) << 21) ^ uint64_t(w.v[1] >> 11);
    return double(bits & ((uint64_t(1) << 53) - 1)) / double(uint64_t(1) << 53);
}

void check_sampling(const SamplingParams& p, int64_t vocab_size) {
    MT_CHECK(p.top_k >= 0, "sampling: top_k must be >= 0, got ", p.top_k);
    MT_CHECK(p.top_p >= 0.0 && p.top_p <= 1.0, "sampling: top_p must be in [0, 1], got ", p.top_p);
    MT_CHECK(p.top_k == 0 || p.top_p == 0.0, "cannot set both top-k and top-p samplings.");
    MT_CHECK(p.temperature > 0.0, "sampling: temperature must be > 0, got ", p.temperature);
    MT_CHECK(p.top_k <= 1 || p.top_k < vocab_size, "top-k is larger than vocab size.");
}

namespace {

int64_t argmax(std::span<const float> x) {
    return std::max_element(x.begin(), x.end()) - x.begin();  // first of equal maxima
}

// Logits below the k-th largest become -inf (equal ones stay).
void keep_top_k(std::vector<double>& x, int64_t k) {
    std::vector<double> sorted = x;
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[size_t(k - 1)];
    for (double& v : x)
        if (v < kth) v = -INFINITY;
}

// In descending order, a logit is dropped when the probability mass before it already exceeds
// top_p: the token that crosses the threshold stays, and so does the first.
void keep_top_p(std::vector<double>& x, double top_p) {
    std::vector<int64_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return x[size_t(a)] > x[size_t(b)]; });
    const double max = x[size_t(order[0])];
    double total = 0;
    for (double v : x) total += std::exp(v - max);
    double before = 0;
    for (size_t i = 0; i < order.size(); ++i) {
        double& v = x[size_t(order[i])];
        const double p = std::exp(v - max) / total;
        if (i > 0 && before > top_p) v = -INFINITY;
        before += p;
    }
}

}  // namespace

int64_t sample_token(std::span<const float> logits, const SamplingParams& p, int64_t vocab_size,
                     SamplingRng& rng) {
    MT_CHECK(!logits.empty(), "sampling: empty logits");
    int64_t id;
    if (p.top_k == 1) {
        id = argmax(logits);
    } else {
        std::vector<double> x(logits.begin(), logits.end());
        if (p.temperature != 1.0)
            for (double& v : x) v /= p.temperature;
        if (p.top_k > 1)
            keep_top_k(x, std::min<int64_t>(p.top_k, int64_t(x.size())));
        else if (p.top_p > 0.0)
            keep_top_p(x, p.top_p);
        const double max = *std::max_element(x.begin(), x.end());
        double total = 0;
        for (double& v : x) total += v = std::exp(v - max);
        const double target = rng.uniform() * total;
        double cum = 0;
        id = -1;
        for (size_t i = 0; i < x.size(); ++i) {
            if (x[i] <= 0) continue;
            id = int64_t(i);  // rounding may leave target at the very end: the last kept id
            cum += x[i];
            if (cum > target) break;
        }
    }
    return std::clamp<int64_t>(id, 0, vocab_size - 1);
}

}  // namespace mt::infer
