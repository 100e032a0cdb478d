// _create_masked_lm_predictions of megatron/core/datasets/masked_dataset.py and BERT's
// _get_token_mask (bert_dataset.py), core_v0.13.0, without the permutation path.
#include "mt/data/masked_lm.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "mt/data/blend_split.h"
#include "mt/error.h"

namespace mt::data {

MaskedLmPredictions create_masked_lm_predictions(std::span<const int64_t> tokens,
                                                 int64_t target_sequence_length,
                                                 NumpyRandomState& rng,
                                                 const MaskedLmOptions& options,
                                                 const TokenMask& token_mask) {
    MT_CHECK(options.max_ngram > 0, "masked LM: masking_max_ngram must be > 0, got ",
             options.max_ngram);
    const auto vocab = static_cast<int64_t>(options.continuation.size());

    // Candidate words: their positions, flat, with start offsets (one more at the end).
    std::vector<int64_t> positions, starts;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t id = tokens[i];
        if (id == options.cls_id || id == options.sep_id) continue;
        MT_CHECK(0 <= id && id < vocab, "masked LM: token id ", id, " at position ", i,
                 " has no vocabulary piece (vocabulary of ", vocab, ")");
        // As in Megatron, a "##" piece joins the last candidate even across a [SEP].
        if (!options.continuation[id] || !options.do_full_word || starts.empty())
            starts.push_back(static_cast<int64_t>(positions.size()));
        positions.push_back(static_cast<int64_t>(i));
    }
    const auto num_candidates = static_cast<int64_t>(starts.size());
    starts.push_back(static_cast<int64_t>(positions.size()));

    // Python compares the float budget with int counts exactly; so do doubles here.
    const double p = options.masking_probability;
    const double rounded = std::nearbyint(static_cast<double>(tokens.size()) * p);  // half-even
    const double budget =
        std::min(p * static_cast<double>(target_sequence_length), std::max(1.0, rounded));

    // P(n) = (1/n) / sum, normalised twice as Megatron does (the second time over the slice
    // every candidate uses, which is the whole range).
    std::vector<double> nprobs(static_cast<size_t>(options.max_ngram));
    for (int64_t n = 1; n <= options.max_ngram; ++n) nprobs[n - 1] = 1.0 / static_cast<double>(n);
    for (int pass = 0; pass < 2; ++pass) {
        const double sum = numpy_sum(nprobs);
        for (double& x : nprobs) x /= sum;
    }

    std::vector<int64_t> order(static_cast<size_t>(num_candidates));
    std::iota(order.begin(), order.end(), int64_t{0});
    rng.shuffle(std::span<int64_t>(order));

    MaskedLmPredictions out;
    out.tokens.assign(tokens.begin(), tokens.end());
    std::vector<std::pair<int64_t, int64_t>> masked;  // (position, original id)
    std::vector<uint8_t> is_masked(tokens.size(), 0);
    std::vector<int64_t> ngram;
    for (int64_t c : order) {
        if (static_cast<double>(masked.size()) >= budget) break;
        int64_t n = options.geometric ? std::min(rng.geometric(0.2), options.max_ngram)
                                      : 1 + rng.choice(nprobs);
        // Shorten the n-gram (candidates c .. c+n-1, fewer at the end) until it fits.
        bool fits = false;
        while (true) {
            const int64_t stop = std::min(c + n, num_candidates);
            ngram.assign(positions.begin() + starts[c], positions.begin() + starts[stop]);
            --n;
            if (budget >= static_cast<double>(masked.size() + ngram.size())) {
                fits = true;
                break;
            }
            if (n == 0) break;
        }
        if (!fits) continue;
        if (std::any_of(ngram.begin(), ngram.end(), [&](int64_t i) { return is_masked[i]; }))
            continue;
        MaskedSpan span;
        for (int64_t i : ngram) {
            is_masked[i] = 1;
            const std::optional<int64_t> replacement = token_mask(rng);
            out.tokens[i] = replacement ? *replacement : tokens[i];
            masked.emplace_back(i, tokens[i]);
            span.positions.push_back(i);
            span.labels.push_back(tokens[i]);
        }
        out.spans.push_back(std::move(span));
    }
    // Megatron shuffles the candidates once more here (for its permutation path); the draws
    // are taken so the state of `rng` matches afterwards.
    rng.shuffle(std::span<int64_t>(order));

    std::sort(masked.begin(), masked.end());
    std::sort(out.spans.begin(), out.spans.end(), [](const MaskedSpan& a, const MaskedSpan& b) {
        return a.positions.front() < b.positions.front();
    });
    for (const auto& [position, label] : masked) {
        out.positions.push_back(position);
        out.labels.push_back(label);
    }
    return out;
}

std::optional<int64_t> bert_token_mask(NumpyRandomState& rng, int64_t mask_id,
                                       std::span<const int64_t> token_lookup) {
    if (rng.random_sample() < 0.8) return mask_id;
    if (rng.random_sample() >= 0.5)
        return token_lookup[static_cast<size_t>(
            rng.randint(0, static_cast<int64_t>(token_lookup.size())))];
    return std::nullopt;
}

}  // namespace mt::data
