// How Megatron turns --data-path, --split and the iteration counts into dataset blends, split
// ranges and requested sample counts (megatron/core/datasets/utils.py, blended_megatron_dataset_*).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"

namespace mt::data {

enum class Split : int { train = 0, valid = 1, test = 2 };
constexpr int kNumSplits = 3;
MT_API const char* split_name(Split split);  // "train", "valid", "test"

// Dataset prefixes with optional (unnormalised) weights.
struct Blend {
    std::vector<std::string> prefixes;
    std::optional<std::vector<double>> weights;
};

// utils.get_blend_from_list: an odd-length list is all prefixes; an even-length list is
// "weight prefix weight prefix ..." unless a weight is not a Python float, in which case the whole
// list is prefixes. As in Megatron, a float weight after a non-float one is an error. Prefixes are
// whitespace-stripped.
MT_API Blend get_blend_from_list(const std::vector<std::string>& items);
// --data-args-path: the same list read from a whitespace-separated file.
MT_API Blend read_blend_file(const std::string& path);

// Python's float(str) for a decimal literal (surrounding whitespace allowed, also inf/nan);
// nullopt where Python would raise ValueError.
MT_API std::optional<double> parse_python_float(const std::string& text);

// numpy.sum of a float64 vector (pairwise summation), then division by it (utils.normalize).
MT_API double numpy_sum(const std::vector<double>& values);
MT_API std::vector<double> normalize_weights(const std::vector<double>& weights);

// parse_and_normalize_split: every run of [.0-9] is a float, padded with 0.0 to three entries,
// then normalised. "949,50,1" -> {0.949, 0.05, 0.001}.
MT_API std::array<double, kNumSplits> parse_and_normalize_split(const std::string& split);

// One split's bookends (start, end) as fractions; absent when end <= start. `start_is_int` marks
// the leading integer 0 of Megatron's cumulative sum (it prints as "0", not "0.0").
struct Bookend {
    double start = 0.0, end = 0.0;
    bool start_is_int = false;
};
using SplitMatrix = std::array<std::optional<Bookend>, kNumSplits>;

// convert_split_vector_to_split_matrix: cumulative bookends [(0, a), (a, a+b), (a+b, a+b+c)].
MT_API SplitMatrix convert_split_vector_to_split_matrix(const std::array<double, kNumSplits>& v);

// Element range [int(round(start*n)), int(round(end*n))) with Python's round-half-to-even.
MT_API std::pair<int64_t, int64_t> split_range(const Bookend& bookend, int64_t num_elements);

// training.get_train_valid_test_num_samples (§2.1): train = train_samples if given (> 0) else
// train_iters * global_batch_size; valid = (train_iters / eval_interval + 1) * eval_iters *
// eval_global_batch_size; test = eval_iters * eval_global_batch_size.
MT_API std::array<int64_t, kNumSplits> train_valid_test_num_samples(
    std::optional<int64_t> train_samples, int64_t train_iters, int64_t global_batch_size,
    int64_t eval_interval, int64_t eval_iters, int64_t eval_global_batch_size);

// _get_size_per_split_per_dataset: result[k][split] = ceil(ceil(size[split] * w[k]) * (1 +
// surplus)) in double arithmetic, as Python computes it. `weights` must be normalised.
MT_API std::vector<std::array<int64_t, kNumSplits>> size_per_split_per_dataset(
    const std::vector<double>& weights, const std::array<int64_t, kNumSplits>& target_sizes,
    double surplus = 0.0);

}  // namespace mt::data
