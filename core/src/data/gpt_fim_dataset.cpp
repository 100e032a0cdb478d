#include "mt/data/gpt_fim_dataset.h"

#include <algorithm>
#include <array>

#include "mt/error.h"

namespace mt::data {

namespace {

// Where each code point of UTF-8 `text` starts, and its end (Python's string indices).
std::vector<size_t> code_point_starts(const std::string& text) {
    std::vector<size_t> starts;
    for (size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
    starts.push_back(text.size());
    return starts;
}

void append(std::vector<int64_t>& out, const std::vector<int32_t>& ids) {
    out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace

GPTFIMDataset::GPTFIMDataset(std::shared_ptr<const GPTDataset> base, const Tokenizer& tokenizer,
                             const FimConfig& config, uint32_t seed)
    : base_(std::move(base)), tokenizer_(tokenizer), config_(config) {
    MT_CHECK(base_ && base_->config().fim, "GPTFIMDataset over indices not built for it");
    MT_CHECK(
        config_.rate >= 0 && config_.rate <= 1 && config_.spm_rate >= 0 && config_.spm_rate <= 1,
        "--fim-rate (", config_.rate, ") and --fim-spm-rate (", config_.spm_rate,
        ") must be probabilities");
    MT_CHECK(!config_.split_sample || config_.fragment_rate,
             "--fim-split-sample needs --fim-fragment-rate (Megatron draws the fragments' FIM "
             "with it)");
    MT_CHECK(!config_.fragment_rate || (*config_.fragment_rate >= 0 && *config_.fragment_rate <= 1),
             "--fim-fragment-rate must be a probability, got ", *config_.fragment_rate);
    MT_CHECK(config_.num_workers >= 0, "--num-workers must be >= 0, got ", config_.num_workers);
    prefix_id_ = tokenizer_.token_to_id(config_.prefix_token);
    middle_id_ = tokenizer_.token_to_id(config_.middle_token);
    suffix_id_ = tokenizer_.token_to_id(config_.suffix_token);
    pad_id_ = tokenizer_.token_to_id(config_.pad_token);
    eod_id_ = tokenizer_.token_to_id(config_.eod_token);
    if (config_.split_sample) split_id_ = tokenizer_.token_to_id(*config_.split_sample);
    streams_.assign(size_t(std::max<int64_t>(config_.num_workers, 1)), NumpyRandomState(seed));
}

Batch GPTFIMDataset::batch(std::span<const int64_t> indices) const {
    current_ = size_t(batches_++ % int64_t(streams_.size()));
    return GPTSampleDataset::batch(indices);
}

GPTSample GPTFIMDataset::get(int64_t i) const {
    return base_->sample_of(text(i, streams_[current_]));
}

std::vector<int64_t> GPTFIMDataset::text(int64_t i, NumpyRandomState& rng) const {
    // (Megatron's FIM reads the sample unpadded; GPTDataset pads what it gives back.)
    const std::vector<int64_t> sample = base_->read(i);
    const size_t length = sample.size();
    std::vector<int64_t> out;
    // Each segment before an EOD (an empty one is dropped with its EOD), then the rest, even
    // when empty.
    size_t start = 0;
    for (size_t at = 0; at < sample.size(); ++at) {
        if (sample[at] != eod_id_) continue;
        if (at > start) {
            const auto permuted = split_and_permute(
                {sample.begin() + std::ptrdiff_t(start), sample.begin() + std::ptrdiff_t(at)}, rng);
            out.insert(out.end(), permuted.begin(), permuted.end());
            out.push_back(eod_id_);
        }
        start = at + 1;
    }
    const auto rest =
        split_and_permute({sample.begin() + std::ptrdiff_t(start), sample.end()}, rng);
    out.insert(out.end(), rest.begin(), rest.end());
    out.resize(length, pad_id_);  // cut, or padded with <fim_pad>
    return base_->padded(std::move(out));
}

std::vector<int64_t> GPTFIMDataset::split_and_permute(const std::vector<int64_t>& sequence,
                                                      NumpyRandomState& rng) const {
    const bool has_split =
        split_id_ && std::find(sequence.begin(), sequence.end(), *split_id_) != sequence.end();
    if (!has_split) return permute(sequence, config_.rate, rng);
    if (rng.binomial(1, config_.rate) == 0) return sequence;
    // Each fragment between split tokens, the split tokens kept (an empty fragment's dropped).
    std::vector<int64_t> out;
    size_t start = 0;
    for (size_t at = 0; at < sequence.size(); ++at) {
        if (sequence[at] != *split_id_) continue;
        if (at > start) {
            const auto permuted = permute(
                {sequence.begin() + std::ptrdiff_t(start), sequence.begin() + std::ptrdiff_t(at)},
                *config_.fragment_rate, rng);
            out.insert(out.end(), permuted.begin(), permuted.end());
            out.push_back(*split_id_);
        }
        start = at + 1;
    }
    const auto rest = permute({sequence.begin() + std::ptrdiff_t(start), sequence.end()},
                              *config_.fragment_rate, rng);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

std::vector<int64_t> GPTFIMDataset::permute(const std::vector<int64_t>& sample, double rate,
                                            NumpyRandomState& rng) const {
    if (rng.binomial(1, rate) == 0) return sample;
    const std::vector<int32_t> ids(sample.begin(), sample.end());
    const std::string contents = tokenizer_.decode_without_special_tokens(ids);
    if (config_.no_prefix && contents.starts_with(*config_.no_prefix)) return sample;
    // Two cut points among the text's characters (Python's string indices), in order.
    const std::vector<size_t> starts = code_point_starts(contents);
    const int64_t characters = int64_t(starts.size()) - 1;
    std::array<int64_t, 2> cut = {rng.randint(0, characters + 1), rng.randint(0, characters + 1)};
    std::sort(cut.begin(), cut.end());
    const size_t a = starts[size_t(cut[0])], b = starts[size_t(cut[1])];
    const std::vector<int32_t> prefix = tokenizer_.encode(contents.substr(0, a));
    const std::vector<int32_t> middle = tokenizer_.encode(contents.substr(a, b - a));
    const std::vector<int32_t> suffix = tokenizer_.encode(contents.substr(b));
    std::vector<int64_t> out{prefix_id_};
    if (rng.binomial(1, config_.spm_rate) != 0) {  // SPM
        out.push_back(suffix_id_);
        append(out, suffix);
        out.push_back(middle_id_);
        append(out, prefix);
        append(out, middle);
    } else {  // PSM
        append(out, prefix);
        out.push_back(suffix_id_);
        append(out, suffix);
        out.push_back(middle_id_);
        append(out, middle);
    }
    return out;
}

}  // namespace mt::data
