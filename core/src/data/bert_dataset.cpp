// BERTMaskedWordPieceDataset of megatron/core/datasets/bert_dataset.py (core_v0.13.0): the
// per-sample draws on masked_dataset.py's base (MaskedWordPieceDataset).
#include "mt/data/bert_dataset.h"

#include <algorithm>
#include <utility>

#include "mt/data/masked_lm.h"
#include "mt/data/numpy_random.h"
#include "mt/error.h"

namespace mt::data {

namespace {

// A [begin, end) window of token ids, cut from either side without moving them.
struct Segment {
    std::vector<int64_t> ids;
    size_t lo = 0, hi = 0;
    size_t size() const { return hi - lo; }
};

}  // namespace

BertMaskedWordPieceDataset::BertMaskedWordPieceDataset(std::shared_ptr<const IndexedDataset> data,
                                                       std::string dataset_path, int64_t begin,
                                                       int64_t end,
                                                       std::optional<int64_t> num_samples,
                                                       Split split, const BertDatasetConfig& config)
    // One [CLS] and two [SEP] come on top of the sentences; with the binary head a sample needs
    // two sentences.
    : MaskedWordPieceDataset(
          class_name(), std::move(data), std::move(dataset_path), begin, end, num_samples, split,
          config, {{"classification_head", JsonValue::boolean(config.classification_head)}}, 3,
          config.classification_head ? 2 : 1),
      config_(config) {}

BertSample BertMaskedWordPieceDataset::get(int64_t i) const {
    const auto [first, last, target] = row(i);
    const int64_t L = config_.sequence_length;
    NumpyRandomState rng = random_state(i);

    // Split the sentences into A (the first `pivot`) and B; with the binary head, swap them
    // half of the time: that is the sentence-order label.
    const int64_t n = last - first;
    int64_t pivot = n;
    bool swapped = false;
    if (config_.classification_head) {
        MT_CHECK(n > 1, "BERTMaskedWordPieceDataset: sample ", i,
                 " has one sentence; the binary head needs two");
        pivot = n >= 3 ? rng.randint(1, n) : 1;
        swapped = rng.random_sample() < 0.5;
    }
    Segment a, b;
    for (int64_t s = first; s < last; ++s) {
        std::vector<int64_t> sentence = corpus().get(s);
        auto& side = s - first < pivot ? a.ids : b.ids;
        side.insert(side.end(), sentence.begin(), sentence.end());
    }
    if (swapped) std::swap(a, b);
    a.hi = a.ids.size();
    b.hi = b.ids.size();

    // Trim the longer side (B on a tie) from a random end until both fit the target.
    bool truncated = false;
    while (static_cast<int64_t>(a.size() + b.size()) > target) {
        Segment& side = a.size() > b.size() ? a : b;
        if (rng.random_sample() < 0.5)
            ++side.lo;
        else
            --side.hi;
        truncated = true;
    }

    std::vector<int64_t> tokens{config_.cls_id};
    tokens.insert(tokens.end(), a.ids.begin() + a.lo, a.ids.begin() + a.hi);
    tokens.push_back(config_.sep_id);
    std::vector<int64_t> types(tokens.size(), 0);
    if (b.size() > 0) {
        tokens.insert(tokens.end(), b.ids.begin() + b.lo, b.ids.begin() + b.hi);
        tokens.push_back(config_.sep_id);
        types.resize(tokens.size(), 1);
    }

    const int64_t mask_id = config_.mask_id;
    const std::span<const int64_t> lookup = token_lookup();
    MaskedLmPredictions masked = create_masked_lm_predictions(
        tokens, target, rng, masking_options(),
        [mask_id, lookup](NumpyRandomState& r) { return bert_token_mask(r, mask_id, lookup); });

    const auto length = static_cast<int64_t>(tokens.size());
    MT_CHECK(length <= L, "BERTMaskedWordPieceDataset: sample ", i, " has ", length,
             " tokens, more than sequence_length ", L);
    BertSample s;
    s.text = std::move(masked.tokens);
    s.text.resize(static_cast<size_t>(L), config_.pad_id);
    s.types = std::move(types);
    s.types.resize(static_cast<size_t>(L), config_.pad_id);
    s.padding_mask.assign(static_cast<size_t>(length), 1);
    s.padding_mask.resize(static_cast<size_t>(L), config_.pad_id);
    s.labels.assign(static_cast<size_t>(L), -1);
    s.loss_mask.assign(static_cast<size_t>(L), 0);
    for (size_t k = 0; k < masked.positions.size(); ++k) {
        s.labels[masked.positions[k]] = masked.labels[k];
        s.loss_mask[masked.positions[k]] = 1;
    }
    s.is_random = swapped ? 1 : 0;
    s.truncated = truncated ? 1 : 0;
    return s;
}

Batch BertMaskedWordPieceDataset::batch(std::span<const int64_t> indices) const {
    const auto B = static_cast<int64_t>(indices.size());
    const int64_t L = config_.sequence_length;
    const char* kRows[] = {"text", "types", "labels", "padding_mask", "loss_mask"};
    Batch out;
    for (const char* name : kRows) out[name] = Tensor::empty({B, L}, DType::i64);
    out["is_random"] = Tensor::empty({B}, DType::i64);
    out["truncated"] = Tensor::empty({B}, DType::i64);
    for (int64_t k = 0; k < B; ++k) {
        const BertSample s = get(indices[static_cast<size_t>(k)]);
        const std::vector<int64_t>* rows[] = {&s.text, &s.types, &s.labels, &s.padding_mask,
                                              &s.loss_mask};
        for (int r = 0; r < 5; ++r)
            std::copy(rows[r]->begin(), rows[r]->end(), out[kRows[r]].data<int64_t>() + k * L);
        out["is_random"].data<int64_t>()[k] = s.is_random;
        out["truncated"].data<int64_t>()[k] = s.truncated;
    }
    return out;
}

}  // namespace mt::data
