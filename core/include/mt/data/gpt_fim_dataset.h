// Megatron core_v0.19's GPTFIMDataset (megatron/training/datasets/fim_dataset.py, --fim-data):
// GPTDataset's samples with fill-in-the-middle applied. Each EOD-separated segment of a sample
// (with --fim-split-sample, each fragment between that token too) is, with probability
// --fim-rate, turned into text (its special tokens left out), cut at two random character
// positions into prefix, middle and suffix, re-encoded and reordered
//   [<prefix>] prefix [<suffix>] suffix [<middle>] middle                (PSM), or
//   [<prefix>, <suffix>] suffix [<middle>] prefix middle                 (SPM, --fim-spm-rate),
// and the sample cut or padded (<fim_pad>) back to its length.
// The draws come from a numpy RandomState(--seed) that Megatron's dataset object keeps and that
// each of the data loader's --num-workers worker processes copies when it starts: worker w takes
// micro-batches w, w + N, ... of an iterator, so a sample's permutation depends on the draws of
// the samples its worker read before it. Here each dataset holds N such streams and hands the
// k-th batch() to stream k mod N, as the training and evaluation loops of a process read them in
// order (--num-workers 0: one stream, the process's own); in a blend each part keeps its own
// streams and sees every batch of the blend (SampleDataset::skip_batch), as each worker's copy of
// the blend holds a copy of every part.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/gpt_dataset.h"
#include "mt/data/numpy_random.h"
#include "mt/tokenizer.h"

namespace mt::data {

// The --fim-* flags, with Megatron's defaults.
struct FimConfig {
    double rate = 0.5;                          // --fim-rate
    double spm_rate = 0.5;                      // --fim-spm-rate
    std::optional<std::string> split_sample;    // --fim-split-sample (a token)
    std::optional<double> fragment_rate;        // --fim-fragment-rate
    std::optional<std::string> no_prefix;       // --fim-no-prefix
    std::string prefix_token = "<fim_prefix>";  // --fim-prefix-token, ...
    std::string middle_token = "<fim_middle>";
    std::string suffix_token = "<fim_suffix>";
    std::string pad_token = "<fim_pad>";
    std::string eod_token = "<|endoftext|>";
    int64_t num_workers = 2;  // --num-workers
};

class MT_API GPTFIMDataset final : public GPTSampleDataset {
  public:
    // Over `base` (built with GPTDatasetConfig::fim), its random streams seeded with `seed`; the
    // tokenizer (which must outlive the dataset) gives the special tokens' ids
    // (Tokenizer::token_to_id) and the texts. mt::Error for settings Megatron rejects.
    GPTFIMDataset(std::shared_ptr<const GPTDataset> base, const Tokenizer& tokenizer,
                  const FimConfig& config, uint32_t seed);

    int64_t size() const override { return base_->size(); }
    Split split() const override { return base_->split(); }
    // Sample i with the current stream's draws.
    GPTSample get(int64_t i) const override;
    // The next worker's micro-batch (not thread-safe: a process's loops read in order).
    Batch batch(std::span<const int64_t> indices) const override;
    // A blend's batch without this part's samples: the next worker's turn passes.
    void skip_batch() const override { ++batches_; }

    // The L + E ids of sample i after fill-in-the-middle, drawing from `rng`.
    std::vector<int64_t> text(int64_t i, NumpyRandomState& rng) const;

  private:
    std::vector<int64_t> split_and_permute(const std::vector<int64_t>& sequence,
                                           NumpyRandomState& rng) const;
    std::vector<int64_t> permute(const std::vector<int64_t>& sample, double rate,
                                 NumpyRandomState& rng) const;

    std::shared_ptr<const GPTDataset> base_;
    const Tokenizer& tokenizer_;
    FimConfig config_;
    int64_t prefix_id_ = 0, middle_id_ = 0, suffix_id_ = 0, pad_id_ = 0, eod_id_ = 0;
    std::optional<int64_t> split_id_;
    mutable std::vector<NumpyRandomState> streams_;
    mutable int64_t batches_ = 0;  // batch() calls so far
    mutable size_t current_ = 0;   // the stream of the batch being read
};

}  // namespace mt::data
