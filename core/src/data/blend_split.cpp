// Blend, split and size arithmetic of megatron/core/datasets/{utils.py,
// blended_megatron_dataset_config.py, blended_megatron_dataset_builder.py}, training.py.
#include "mt/data/blend_split.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mt/error.h"

namespace mt::data {

namespace {

std::string strip(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

// numpy's pairwise_sum for float64 (numpy/_core/src/umath/loops_utils.h.src).
double pairwise_sum(const double* a, size_t n) {
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8) {
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        }
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

}  // namespace

const char* split_name(Split split) {
    switch (split) {
        case Split::train:
            return "train";
        case Split::valid:
            return "valid";
        case Split::test:
            return "test";
    }
    return "";
}

std::optional<double> parse_python_float(const std::string& text) {
    std::string s = strip(text);
    if (s.empty()) return std::nullopt;
    // strtod also takes hexadecimal literals, which Python's float() rejects.
    for (char c : s) {
        if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return std::nullopt;
    }
    errno = 0;
    char* end = nullptr;
    double value = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    return value;
}

Blend get_blend_from_list(const std::vector<std::string>& items) {
    Blend blend;
    if (items.size() % 2 == 1) {
        for (const auto& p : items) blend.prefixes.push_back(strip(p));
        return blend;
    }
    std::vector<double> weights;
    bool saw_non_float = false;
    for (size_t i = 0; i < items.size(); i += 2) {
        std::optional<double> w = parse_python_float(items[i]);
        // Megatron's `any(is_none)` / `all(is_none)` share one iterator: once a weight is not a
        // float, every later weight must also fail float().
        MT_CHECK(!(saw_non_float && w), "--data-path: '", items[i],
                 "' parses as a weight but an earlier weight did not; give either 'weight prefix' "
                 "pairs or plain prefixes");
        if (!w) {
            saw_non_float = true;
            continue;
        }
        weights.push_back(*w);
        blend.prefixes.push_back(strip(items[i + 1]));
    }
    if (saw_non_float) {
        blend.prefixes.clear();
        for (const auto& p : items) blend.prefixes.push_back(strip(p));
        return blend;
    }
    blend.weights = std::move(weights);
    return blend;
}

Blend read_blend_file(const std::string& path) {
    std::ifstream in(path);
    MT_CHECK(in.good(), "--data-args-path: cannot read ", path);
    std::vector<std::string> items;
    std::string word;
    while (in >> word) items.push_back(word);
    return get_blend_from_list(items);
}

double numpy_sum(const std::vector<double>& values) {
    return 0.0 + pairwise_sum(values.data(), values.size());
}

std::vector<double> normalize_weights(const std::vector<double>& weights) {
    double sum = numpy_sum(weights);
    MT_CHECK(sum > 0.0, "weights must have a positive sum, got ", sum);
    std::vector<double> out;
    out.reserve(weights.size());
    for (double w : weights) out.push_back(w / sum);
    return out;
}

std::array<double, kNumSplits> parse_and_normalize_split(const std::string& split) {
    std::vector<double> values;
    for (size_t i = 0; i < split.size();) {
        auto in_class = [&](char c) { return c == '.' || (c >= '0' && c <= '9'); };
        if (!in_class(split[i])) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < split.size() && in_class(split[j])) ++j;
        std::string piece = split.substr(i, j - i);
        std::optional<double> v = parse_python_float(piece);
        MT_CHECK(v.has_value(), "--split '", split, "': '", piece, "' is not a number");
        values.push_back(*v);
        i = j;
    }
    MT_CHECK(values.size() <= static_cast<size_t>(kNumSplits), "--split '", split, "' has ",
             values.size(), " entries, at most ", kNumSplits, " allowed");
    values.resize(kNumSplits, 0.0);
    std::vector<double> normalized = normalize_weights(values);
    return {normalized[0], normalized[1], normalized[2]};
}

SplitMatrix convert_split_vector_to_split_matrix(const std::array<double, kNumSplits>& v) {
    SplitMatrix matrix;
    // Megatron's cumulative sum starts from the Python int 0, so the first bookend's start is an
    // int; the later ones are floats.
    double start = 0.0;
    bool start_is_int = true;
    for (int i = 0; i < kNumSplits; ++i) {
        double end = start + v[i];
        if (end > start) matrix[i] = Bookend{start, end, start_is_int};
        start = end;
        start_is_int = false;
    }
    return matrix;
}

std::pair<int64_t, int64_t> split_range(const Bookend& bookend, int64_t num_elements) {
    double n = static_cast<double>(num_elements);
    // std::nearbyint in the default rounding mode is Python's round(): half to even.
    return {static_cast<int64_t>(std::nearbyint(bookend.start * n)),
            static_cast<int64_t>(std::nearbyint(bookend.end * n))};
}

std::array<int64_t, kNumSplits> train_valid_test_num_samples(
    std::optional<int64_t> train_samples, int64_t train_iters, int64_t global_batch_size,
    int64_t eval_interval, int64_t eval_iters, int64_t eval_global_batch_size) {
    MT_CHECK(eval_interval > 0, "--eval-interval must be positive, got ", eval_interval);
    int64_t train =
        (train_samples && *train_samples > 0) ? *train_samples : train_iters * global_batch_size;
    int64_t valid = (train_iters / eval_interval + 1) * eval_iters * eval_global_batch_size;
    return {train, valid, eval_iters * eval_global_batch_size};
}

std::vector<std::array<int64_t, kNumSplits>> size_per_split_per_dataset(
    const std::vector<double>& weights, const std::array<int64_t, kNumSplits>& target_sizes,
    double surplus) {
    std::vector<std::array<int64_t, kNumSplits>> out;
    for (double w : weights) {
        std::array<int64_t, kNumSplits> row{};
        for (int s = 0; s < kNumSplits; ++s) {
            double target = std::ceil(static_cast<double>(target_sizes[s]) * w);
            row[s] = static_cast<int64_t>(std::ceil(target * (1.0 + surplus)));
        }
        out.push_back(row);
    }
    return out;
}

}  // namespace mt::data
