// Blending indices (helpers.cpp) and BlendedDataset (blended_dataset.py) at core_v0.13.0.
#include "mt/data/blended_dataset.h"
#include "mt/io/durable.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <unistd.h>

#include "mt/error.h"
#include "mt/log.h"

namespace mt::data {

namespace fs = std::filesystem;

void build_blending_indices(const std::vector<double>& weights, int64_t size,
                            NpyArray& dataset_index, NpyArray& dataset_sample_index) {
    MT_CHECK(!weights.empty(), "build_blending_indices: no datasets");
    dataset_index = NpyArray::zeros(NpyType::i16, {size});
    dataset_sample_index = NpyArray::zeros(NpyType::i64, {size});
    int16_t* index = dataset_index.data<int16_t>();
    int64_t* sample = dataset_sample_index.data<int64_t>();
    std::vector<int64_t> counts(weights.size(), 0);
    for (int64_t s = 0; s < size; ++s) {
        double x = std::max(static_cast<double>(s), 1.0);
        size_t best = 0;
        double best_error = weights[0] * x - static_cast<double>(counts[0]);
        for (size_t k = 1; k < weights.size(); ++k) {
            double error = weights[k] * x - static_cast<double>(counts[k]);
            if (error > best_error) {
                best_error = error;
                best = k;
            }
        }
        index[s] = static_cast<int16_t>(best);
        sample[s] = counts[best]++;
    }
}

void build_exhaustive_blending_indices(const std::vector<int64_t>& sizes, NpyArray& dataset_index,
                                       NpyArray& dataset_sample_index) {
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    dataset_index = NpyArray::zeros(NpyType::i16, {total});
    dataset_sample_index = NpyArray::zeros(NpyType::i64, {total});
    int16_t* index = dataset_index.data<int16_t>();
    int64_t* sample = dataset_sample_index.data<int64_t>();
    std::vector<double> weights;
    std::set<size_t> unspent;
    for (size_t k = 0; k < sizes.size(); ++k) {
        weights.push_back(static_cast<double>(sizes[k]) / static_cast<double>(total));
        // An empty dataset could never be spent (helpers.cpp would loop forever); skip it.
        if (sizes[k] > 0) unspent.insert(k);
    }
    std::vector<int64_t> counts(sizes.size(), 0);
    int64_t s = 0;
    while (!unspent.empty()) {
        double x = std::max(static_cast<double>(s), 1.0);
        size_t best = 0;
        double best_error = std::numeric_limits<double>::lowest();
        for (size_t k : unspent) {
            double error = weights[k] * x - static_cast<double>(counts[k]);
            if (error > best_error) {
                best = k;
                best_error = error;
            }
        }
        index[s] = static_cast<int16_t>(best);
        sample[s] = counts[best]++;
        if (counts[best] == sizes[best]) unspent.erase(best);
        ++s;
    }
}

BlendedDataset::BlendedDataset(std::vector<BlendPart> parts, std::vector<double> weights,
                               bool integer_weights, std::optional<int64_t> size,
                               const BlendedMegatronDatasetConfig& config)
    : parts_(std::move(parts)), integer_weights_(integer_weights), size_(size) {
    MT_CHECK(!parts_.empty() && parts_.size() == weights.size(), "BlendedDataset: ", parts_.size(),
             " datasets but ", weights.size(), " weights");
    MT_CHECK(parts_.size() < 32767, "BlendedDataset: too many datasets (", parts_.size(), ")");
    for (const BlendPart& p : parts_) MT_CHECK(p.dataset, "BlendedDataset: a dataset is missing");
    split_ = parts_[0].dataset->split();
    for (size_t k = 0; k < parts_.size(); ++k) {
        MT_CHECK(parts_[k].dataset->split() == split_,
                 "BlendedDataset: datasets of different splits");
        MT_CHECK(weights[k] > 0, "BlendedDataset: weight ", k, " is ", weights[k],
                 ", weights must be positive");
    }
    if (size_) {
        weights_ = normalize_weights(weights);
        integer_weights_ = false;
    } else {
        MT_CHECK(integer_weights_,
                 "BlendedDataset: an exhaustive blend (no size) needs sample "
                 "counts as weights");
        weights_ = std::move(weights);
    }

    JsonValue ids = JsonValue::object();
    ids.set("class", JsonValue::string("BlendedDataset"));
    JsonValue list = JsonValue::array();
    for (const BlendPart& p : parts_) list.push(p.unique_identifiers);
    ids.set("datasets", std::move(list));
    ids.set("split", JsonValue::string(split_name(split_)));
    JsonValue w = JsonValue::array();
    for (double v : weights_) {
        w.push(integer_weights_ ? JsonValue::integer(static_cast<int64_t>(v)) : JsonValue::real(v));
    }
    ids.set("weights", std::move(w));
    ids.set("size", size_ ? JsonValue::integer(*size_) : JsonValue());
    unique_description_ = ids.dumps();
    unique_description_hash_ = md5_hex(unique_description_);

    // Megatron caches blends only when a cache path is configured.
    auto path_to = [&](const std::string& suffix) {
        return (fs::path(*config.path_to_cache) /
                (unique_description_hash_ + "-BlendedDataset-" + split_name(split_) + "-" + suffix))
            .string();
    };
    if (config.path_to_cache && fs::is_regular_file(path_to("description.txt")) &&
        fs::is_regular_file(path_to("dataset_index.npy")) &&
        fs::is_regular_file(path_to("dataset_sample_index.npy"))) {
        dataset_index_ = NpyArray::load(path_to("dataset_index.npy"));
        dataset_sample_index_ = NpyArray::load(path_to("dataset_sample_index.npy"));
        MT_CHECK(dataset_index_.type() == NpyType::i16 &&
                     dataset_sample_index_.type() == NpyType::i64 &&
                     dataset_index_.numel() == dataset_sample_index_.numel(),
                 "BlendedDataset cache ", path_to("dataset_index.npy"), ": unexpected arrays");
        loaded_from_cache_ = true;
        return;
    }
    if (size_) {
        build_blending_indices(weights_, *size_, dataset_index_, dataset_sample_index_);
    } else {
        std::vector<int64_t> counts;
        for (double v : weights_) counts.push_back(static_cast<int64_t>(v));
        build_exhaustive_blending_indices(counts, dataset_index_, dataset_sample_index_);
    }
    std::vector<int64_t> drawn(parts_.size(), 0);
    for (int64_t s = 0; s < dataset_index_.numel(); ++s) ++drawn[dataset_index_.at(s)];
    for (size_t k = 0; k < parts_.size(); ++k) {
        MT_CHECK(drawn[k] <= parts_[k].dataset->size(), "the ", split_name(split_),
                 " blend oversamples the contributing datasets: it requests ", drawn[k],
                 " samples from dataset ", k, " which has ", parts_[k].dataset->size(),
                 "; raise --mid-level-dataset-surplus (now ", config.mid_level_dataset_surplus,
                 ")");
    }
    if (config.path_to_cache) {
        fs::create_directories(*config.path_to_cache);
        fs::path tmp = path_to("description.txt") + ".tmp" + std::to_string(::getpid());
        {
            std::ofstream out(tmp, std::ios::binary);
            out << unique_description_;
            MT_CHECK(out.good(), "cannot write ", tmp.string());
        }
        io::rename_path(tmp, path_to("description.txt"));
        dataset_index_.save(path_to("dataset_index.npy"));
        dataset_sample_index_.save(path_to("dataset_sample_index.npy"));
    }
}

void BlendedDataset::skip_batch() const {
    for (const BlendPart& part : parts_) part.dataset->skip_batch();
}

Batch BlendedDataset::batch(std::span<const int64_t> indices) const {
    const int64_t B = int64_t(indices.size());
    // Each part reads its rows in one call; the rows then go back to their positions.
    std::vector<std::vector<int64_t>> wanted(parts_.size()), rows(parts_.size());
    Tensor dataset_id = Tensor::empty({B}, DType::i64);
    for (int64_t b = 0; b < B; ++b) {
        const int64_t i = indices[size_t(b)];
        MT_CHECK(0 <= i && i < size(), "BlendedDataset: sample ", i, " outside [0, ", size(), ")");
        const int64_t k = dataset_index_.at(i);
        wanted[size_t(k)].push_back(dataset_sample_index_.at(i));
        rows[size_t(k)].push_back(b);
        dataset_id.data<int64_t>()[b] = k;
    }
    Batch out;
    bool first = true;
    for (size_t k = 0; k < parts_.size(); ++k) {
        if (wanted[k].empty()) {
            parts_[k].dataset->skip_batch();  // (every part sees every batch of the blend)
            continue;
        }
        const Batch part = parts_[k].dataset->batch(wanted[k]);
        MT_CHECK(first || part.size() == out.size(), "BlendedDataset: dataset ", k, " gives ",
                 part.size(), " fields, another ", out.size());
        for (const auto& [key, given] : part) {
            const Tensor t = given.contiguous();
            Shape shape = t.shape();
            MT_CHECK(!shape.empty() && shape[0] == int64_t(wanted[k].size()),
                     "BlendedDataset: ", key, " of dataset ", k, " is ", t.describe(), " for ",
                     wanted[k].size(), " samples");
            shape[0] = B;
            auto [it, added] = out.try_emplace(key);
            if (added) {
                MT_CHECK(first, "BlendedDataset: dataset ", k, " gives a field ", key,
                         " the others lack");
                it->second = Tensor::empty(shape, t.dtype());
            }
            Tensor& merged = it->second;
            MT_CHECK(merged.shape() == shape && merged.dtype() == t.dtype(),
                     "BlendedDataset: ", key, " of dataset ", k, " is ", t.describe(),
                     ", of another ", merged.describe());
            const int64_t row_bytes = merged.nbytes() / B;
            const auto* from = static_cast<const char*>(t.raw_data());
            auto* to = static_cast<char*>(merged.raw_data());
            for (size_t r = 0; r < rows[k].size(); ++r)
                std::memcpy(to + rows[k][r] * row_bytes, from + int64_t(r) * row_bytes,
                            size_t(row_bytes));
        }
        first = false;
    }
    out["dataset_id"] = dataset_id;
    return out;
}

}  // namespace mt::data
