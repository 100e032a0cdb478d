// build_mapping of megatron/core/datasets/helpers.cpp (core_v0.13.0).
#include "mt/data/bert_sample_mapping.h"

#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "mt/error.h"

namespace mt::data {

namespace {

// get_target_sample_len: one mt19937 draw per call unless short sequences are off. The draw
// is a 64-bit unsigned long (uint_fast32_t), so the modulos are unsigned as in helpers.cpp.
int32_t target_sample_length(int32_t short_seq_ratio, int32_t max_length, std::mt19937& rng) {
    if (short_seq_ratio == 0) return max_length;
    const auto r = rng();
    if (r % static_cast<unsigned long>(short_seq_ratio) == 0)
        return static_cast<int32_t>(2 + r % static_cast<unsigned long>(max_length - 1));
    return max_length;
}

}  // namespace

NpyArray build_bert_sample_mapping(std::span<const int64_t> docs, std::span<const int32_t> sizes,
                                   int32_t num_epochs, uint64_t max_num_samples,
                                   int32_t max_seq_length, double short_seq_prob, int32_t seed,
                                   int32_t min_num_sentences) {
    MT_CHECK(num_epochs > 0, "build_bert_sample_mapping: num_epochs must be > 0, got ", num_epochs);
    MT_CHECK(max_seq_length > 1, "build_bert_sample_mapping: target length must be > 1, got ",
             max_seq_length, " (sequence_length too small)");
    MT_CHECK(short_seq_prob >= 0.0 && short_seq_prob <= 1.0,
             "build_bert_sample_mapping: short_seq_prob ", short_seq_prob, " outside [0, 1]");
    MT_CHECK(seed > 0 && seed < std::numeric_limits<int32_t>::max(),
             "build_bert_sample_mapping: seed must be in [1, 2^31 - 2], got ", seed);
    MT_CHECK(!docs.empty(), "build_bert_sample_mapping: no document boundaries");
    MT_CHECK(sizes.size() <= std::numeric_limits<uint32_t>::max(),
             "build_bert_sample_mapping: ", sizes.size(),
             " sentences need Megatron's uint64 sample index, which is not supported");
    for (size_t d = 0; d + 1 < docs.size(); ++d) {
        MT_CHECK(0 <= docs[d] && docs[d] <= docs[d + 1] &&
                     docs[d + 1] <= static_cast<int64_t>(sizes.size()),
                 "build_bert_sample_mapping: document ", d, " spans sentences [", docs[d], ", ",
                 docs[d + 1], ") outside the ", sizes.size(), " sentences");
    }

    int32_t short_seq_ratio = 0;
    if (short_seq_prob > 0)
        short_seq_ratio = static_cast<int32_t>(std::round(1.0 / short_seq_prob));

    // Two identical walks, as in helpers.cpp: the first counts the samples, the second writes
    // them into an array of that size (no growing buffer on top of the result).
    auto walk = [&](auto&& emit) {
        std::mt19937 rng32(static_cast<std::mt19937::result_type>(seed));
        uint64_t num_samples = 0;
        for (int32_t epoch = 0; epoch < num_epochs; ++epoch) {
            if (num_samples >= max_num_samples) break;
            const uint64_t before = num_samples;
            for (size_t doc = 0; doc + 1 < docs.size(); ++doc) {
                const int64_t first = docs[doc], last = docs[doc + 1];
                int64_t start = first;
                int64_t remaining = last - first;
                bool long_sentence = false;
                if (remaining > 1) {
                    for (int64_t s = first; s < last && !long_sentence; ++s)
                        long_sentence = sizes[s] > kLongSentenceLength;
                }
                if (remaining < min_num_sentences || long_sentence) continue;

                int32_t length = 0, count = 0;
                int32_t target = target_sample_length(short_seq_ratio, max_seq_length, rng32);
                for (int64_t s = first; s < last; ++s) {
                    length += sizes[s];
                    ++count;
                    --remaining;
                    // Close the sample when it is long enough and leaves more than one sentence
                    // (a lone last sentence would be too short to stand alone), or at the end.
                    if ((length >= target && remaining > 1 && count >= min_num_sentences) ||
                        remaining == 0) {
                        emit(num_samples, start, s + 1, target);
                        ++num_samples;
                        start = s + 1;
                        target = target_sample_length(short_seq_ratio, max_seq_length, rng32);
                        length = 0;
                        count = 0;
                    }
                }
            }
            MT_CHECK(num_samples > before || epoch + 1 == num_epochs,
                     "build_bert_sample_mapping: no document of the split has ", min_num_sentences,
                     " or more sentences without one longer than ", kLongSentenceLength,
                     " tokens, so no sample can be made");
        }
        return num_samples;
    };

    const auto n = static_cast<int64_t>(walk([](uint64_t, int64_t, int64_t, int32_t) {}));
    NpyArray out = NpyArray::zeros(NpyType::u32, {n, 3});
    uint32_t* rows = out.data<uint32_t>();
    walk([rows](uint64_t k, int64_t start, int64_t end, int32_t target) {
        rows[3 * k] = static_cast<uint32_t>(start);
        rows[3 * k + 1] = static_cast<uint32_t>(end);
        rows[3 * k + 2] = static_cast<uint32_t>(target);
    });

    // Fisher-Yates with a 64-bit engine: Megatron's sample counts may pass 2^31.
    std::mt19937_64 rng64(static_cast<std::mt19937_64::result_type>(seed + 1));
    for (int64_t i = n - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(rng64() % static_cast<uint64_t>(i + 1));
        for (int k = 0; k < 3; ++k) std::swap(rows[3 * i + k], rows[3 * j + k]);
    }

    return out;
}

}  // namespace mt::data
