// Blending indices (helpers.cpp) and BlendedDataset (blended_dataset.py) at core_v0.13.0.
#include "mt/data/blended_dataset.h"

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

BlendedDataset::BlendedDataset(std::vector<std::shared_ptr<const GPTDataset>> datasets,
                               std::vector<double> weights, bool integer_weights,
                               std::optional<int64_t> size, const GPTDatasetConfig& config)
    : datasets_(std::move(datasets)), integer_weights_(integer_weights), size_(size) {
    MT_CHECK(!datasets_.empty() && datasets_.size() == weights.size(),
             "BlendedDataset: ", datasets_.size(), " datasets but ", weights.size(), " weights");
    MT_CHECK(datasets_.size() < 32767, "BlendedDataset: too many datasets (", datasets_.size(),
             ")");
    split_ = datasets_[0]->split();
    for (size_t k = 0; k < datasets_.size(); ++k) {
        MT_CHECK(datasets_[k]->split() == split_, "BlendedDataset: datasets of different splits");
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
    for (const auto& d : datasets_) list.push(d->unique_identifiers());
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
    std::vector<int64_t> drawn(datasets_.size(), 0);
    for (int64_t s = 0; s < dataset_index_.numel(); ++s) ++drawn[dataset_index_.at(s)];
    for (size_t k = 0; k < datasets_.size(); ++k) {
        MT_CHECK(drawn[k] <= datasets_[k]->size(), "the ", split_name(split_),
                 " blend oversamples the contributing datasets: it requests ", drawn[k],
                 " samples from dataset ", k, " which has ", datasets_[k]->size(),
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
        fs::rename(tmp, path_to("description.txt"));
        dataset_index_.save(path_to("dataset_index.npy"));
        dataset_sample_index_.save(path_to("dataset_sample_index.npy"));
    }
}

GPTSample BlendedDataset::get(int64_t i) const {
    MT_CHECK(0 <= i && i < size(), "BlendedDataset: sample ", i, " outside [0, ", size(), ")");
    int64_t k = dataset_index_.at(i);
    GPTSample s = datasets_[k]->get(dataset_sample_index_.at(i));
    s.dataset_id = static_cast<int32_t>(k);
    return s;
}

}  // namespace mt::data
