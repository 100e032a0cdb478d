// GPTDataset index construction and sample reads, following megatron/core/datasets/gpt_dataset.py
// and helpers.cpp (build_sample_idx) at core_v0.13.0.
#include "mt/data/gpt_dataset.h"
#include "mt/io/durable.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>

#include <unistd.h>

#include "mt/error.h"
#include "mt/log.h"

namespace mt::data {

namespace fs = std::filesystem;

std::vector<uint8_t> materialize_attention_mask(const GPTSample& sample) {
    size_t n = sample.document_start.size();
    std::vector<uint8_t> mask(n * n, 1);
    for (size_t q = 0; q < n; ++q) {
        for (size_t k = static_cast<size_t>(sample.document_start[q]); k <= q; ++k) {
            mask[q * n + k] = 0;
        }
    }
    return mask;
}

// ---- index builders ----

NpyArray build_document_index(int64_t begin, int64_t end, int64_t num_epochs, NumpyRandomState& rng,
                              bool separate_final_epoch) {
    MT_CHECK(num_epochs >= 1, "build_document_index: num_epochs must be >= 1, got ", num_epochs);
    if (separate_final_epoch && num_epochs > 1) {
        NpyArray first = build_document_index(begin, end, num_epochs - 1, rng, false);
        NpyArray last = build_document_index(begin, end, 1, rng, false);
        NpyArray all = NpyArray::zeros(NpyType::i32, {first.numel() + last.numel()});
        std::copy(first.data<int32_t>(), first.data<int32_t>() + first.numel(),
                  all.data<int32_t>());
        std::copy(last.data<int32_t>(), last.data<int32_t>() + last.numel(),
                  all.data<int32_t>() + first.numel());
        return all;
    }
    int64_t n = end - begin;
    NpyArray index = NpyArray::zeros(NpyType::i32, {num_epochs * n});
    int32_t* p = index.data<int32_t>();
    for (int64_t e = 0; e < num_epochs; ++e) {
        std::iota(p + e * n, p + (e + 1) * n, static_cast<int32_t>(begin));
    }
    rng.shuffle(std::span<int32_t>(p, static_cast<size_t>(index.numel())));
    return index;
}

namespace {

template <class T>
void fill_sample_index(T* out, const std::vector<int32_t>& sizes, const int32_t* document_index,
                       int64_t num_documents, int32_t sequence_length, int64_t num_samples,
                       int32_t extra) {
    int64_t row = 0;
    T doc = 0, offset = 0;
    out[0] = doc;
    out[1] = offset;
    ++row;
    while (row <= num_samples) {
        int64_t remaining = sequence_length + extra;
        while (remaining != 0) {
            int64_t document_length = sizes[document_index[doc]] - static_cast<int64_t>(offset);
            remaining -= document_length;
            if (remaining <= 0) {
                // The sample ends inside this document; the next one starts E tokens earlier.
                offset = static_cast<T>(offset + remaining + document_length - extra);
                remaining = 0;
            } else {
                if (doc == num_documents - 1) {
                    // Out of documents (only the last, partial sample gets here).
                    offset = static_cast<T>(sizes[document_index[doc]] - extra);
                    break;
                }
                ++doc;
                offset = 0;
            }
        }
        out[2 * row] = doc;
        out[2 * row + 1] = offset;
        ++row;
    }
}

}  // namespace

NpyArray build_sample_index(const std::vector<int32_t>& sizes, const NpyArray& document_index,
                            int32_t sequence_length, int32_t num_epochs, int64_t tokens_per_epoch,
                            bool drop_last_partial_sequence, int32_t add_extra_token) {
    MT_CHECK(sequence_length > 1, "build_sample_index: sequence_length must be > 1, got ",
             sequence_length);
    MT_CHECK(num_epochs > 0 && tokens_per_epoch > 1, "build_sample_index: bad epochs ", num_epochs,
             " / tokens per epoch ", tokens_per_epoch);
    MT_CHECK(document_index.type() == NpyType::i32, "build_sample_index: document index not int32");
    int64_t total = num_epochs * tokens_per_epoch - add_extra_token;
    int64_t num_samples = 0;
    if (drop_last_partial_sequence) {
        num_samples = total / sequence_length;
    } else {
        // helpers.cpp divides in single precision: ceil(float(total) / seq_length).
        num_samples = static_cast<int64_t>(
            std::ceil(static_cast<float>(total) / static_cast<float>(sequence_length)));
    }
    int64_t max_size = 0;
    for (int32_t s : sizes) max_size = std::max<int64_t>(max_size, s);
    bool narrow = std::max(document_index.numel(), max_size) <= std::numeric_limits<int32_t>::max();
    NpyArray out = NpyArray::zeros(narrow ? NpyType::i32 : NpyType::i64, {num_samples + 1, 2});
    const int32_t* docs = document_index.data<int32_t>();
    if (narrow) {
        fill_sample_index(out.data<int32_t>(), sizes, docs, document_index.numel(), sequence_length,
                          num_samples, add_extra_token);
    } else {
        fill_sample_index(out.data<int64_t>(), sizes, docs, document_index.numel(), sequence_length,
                          num_samples, add_extra_token);
    }
    return out;
}

NpyArray build_shuffle_index(int64_t num_samples, int64_t total_size, NumpyRandomState& rng) {
    MT_CHECK(0 <= num_samples && num_samples <= total_size, "build_shuffle_index: bad range [0, ",
             num_samples, ") of ", total_size);
    bool wide = total_size >= static_cast<int64_t>(std::numeric_limits<uint32_t>::max()) - 1;
    NpyArray out = NpyArray::zeros(wide ? NpyType::i64 : NpyType::u32, {total_size});
    auto fill = [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        std::iota(p, p + total_size, T{0});
        rng.shuffle(std::span<T>(p, static_cast<size_t>(num_samples)));
        if (num_samples < total_size) {
            rng.shuffle(
                std::span<T>(p + num_samples, static_cast<size_t>(total_size - num_samples)));
        }
    };
    if (wide)
        fill(out.data<int64_t>());
    else
        fill(out.data<uint32_t>());
    return out;
}

int64_t gpt_num_epochs(int64_t tokens_per_epoch, std::optional<int64_t> num_samples,
                       int64_t sequence_length, int64_t add_extra_token) {
    if (!num_samples) return 1;
    MT_CHECK(tokens_per_epoch > 0, "GPTDataset: the split has no tokens but ", *num_samples,
             " samples were requested");
    int64_t requested = *num_samples * sequence_length + add_extra_token;
    // Smallest e with e * tokens_per_epoch >= requested (and at least 1).
    return std::max<int64_t>(1, (requested + tokens_per_epoch - 1) / tokens_per_epoch);
}

std::pair<bool, int64_t> gpt_separate_final_epoch(int64_t num_epochs, int64_t tokens_per_epoch,
                                                  int64_t num_samples, int64_t sequence_length,
                                                  int64_t add_extra_token) {
    if (num_epochs == 1) return {false, 0};
    int64_t before_last = ((num_epochs - 1) * tokens_per_epoch - add_extra_token) / sequence_length;
    int64_t from_last = num_samples - before_last;
    int64_t per_epoch = (tokens_per_epoch - add_extra_token) / sequence_length;
    MT_CHECK(from_last >= 0 && from_last <= per_epoch + 1, "GPTDataset: ", from_last,
             " samples from the final epoch, outside [0, ", per_epoch + 1, "]");
    // Python: num_samples_from_final_epoch < int(0.80 * num_samples_per_epoch).
    bool separate = from_last < static_cast<int64_t>(0.80 * static_cast<double>(per_epoch));
    return {separate, before_last};
}

// ---- GPTDataset ----

namespace {

void write_text_atomically(const fs::path& path, const std::string& text) {
    fs::path tmp = path;
    tmp += ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary);
        out << text;
        MT_CHECK(out.good(), "cannot write ", tmp.string());
    }
    io::rename_path(tmp, path);
}

}  // namespace

GPTDataset::GPTDataset(std::shared_ptr<const TokenSequences> data,
                       std::optional<std::string> dataset_path, int64_t begin, int64_t end,
                       std::optional<int64_t> num_samples, Split split,
                       const GPTDatasetConfig& config)
    : data_(std::move(data)),
      dataset_path_(std::move(dataset_path)),
      begin_(begin),
      end_(end),
      num_samples_(num_samples),
      split_(split),
      config_(config) {
    MT_CHECK(data_ != nullptr, "GPTDataset: no indexed dataset");
    MT_CHECK(0 <= begin_ && begin_ <= end_ && end_ <= data_->num_sequences(), "GPTDataset ",
             dataset_path_.value_or("(mock data)"), ": split range [", begin_, ", ", end_,
             ") outside the ", data_->num_sequences(), " sequences");
    MT_CHECK(config_.sequence_length > 1, "GPTDataset: sequence_length must be > 1, got ",
             config_.sequence_length);

    unique_identifiers_ = dataset_identifiers(
        {class_name(), dataset_path_, num_samples_, split_, config_.random_seed,
         config_.sequence_length, config_.split, config_.split_matrix(), config_.tokenizer});
    unique_description_ = unique_identifiers_.dumps();
    unique_description_hash_ = md5_hex(unique_description_);

    if (config_.path_to_cache)
        cache_dir_ = *config_.path_to_cache;
    else if (dataset_path_)
        cache_dir_ = (fs::path(*dataset_path_) / "cache" / "GPTDataset_indices").string();
    build_indices();
}

std::string GPTDataset::cache_path(const std::string& suffix) const {
    if (!cache_dir_) return {};
    return (fs::path(*cache_dir_) / (unique_description_hash_ + "-" + class_name() + "-" +
                                     split_name(split_) + "-" + suffix))
        .string();
}

void GPTDataset::build_indices() {
    const char* kFiles[] = {"description.txt", "document_index.npy", "sample_index.npy",
                            "shuffle_index.npy"};
    bool hit = cache_dir_.has_value();
    for (const char* f : kFiles) hit = hit && fs::is_regular_file(cache_path(f));
    if (hit) {
        document_index_ = NpyArray::load(cache_path("document_index.npy"));
        sample_index_ = NpyArray::load(cache_path("sample_index.npy"));
        shuffle_index_ = NpyArray::load(cache_path("shuffle_index.npy"));
        MT_CHECK(sample_index_.shape().size() == 2 && sample_index_.shape()[1] == 2 &&
                     shuffle_index_.numel() == sample_index_.shape()[0] - 1,
                 "GPTDataset cache ", cache_path("sample_index.npy"),
                 ": sample and shuffle index shapes disagree");
        loaded_from_cache_ = true;
        log::info("Load the ", class_name(), " ", split_name(split_), " indices from ",
                  *cache_dir_);
        return;
    }
    const int64_t extra = config_.add_extra_token_to_sequence ? 1 : 0;
    const int64_t L = config_.sequence_length;
    std::vector<int32_t> sizes(static_cast<size_t>(data_->num_sequences()));
    for (int64_t i = 0; i < data_->num_sequences(); ++i) sizes[i] = data_->sequence_length(i);
    int64_t tokens_per_epoch = 0;
    for (int64_t i = begin_; i < end_; ++i) tokens_per_epoch += sizes[i];

    num_epochs_ = gpt_num_epochs(tokens_per_epoch, num_samples_, L, extra);
    auto [separate, samples_before_last] =
        num_samples_
            ? gpt_separate_final_epoch(num_epochs_, tokens_per_epoch, *num_samples_, L, extra)
            : std::pair<bool, int64_t>{false, 0};
    separate_final_epoch_ = separate;

    NumpyRandomState rng(config_.random_seed);
    document_index_ = build_document_index(begin_, end_, num_epochs_, rng, separate);
    bool drop_last = split_ != Split::valid || config_.drop_last_partial_validation_sequence;
    sample_index_ = build_sample_index(sizes, document_index_, static_cast<int32_t>(L),
                                       static_cast<int32_t>(num_epochs_), tokens_per_epoch,
                                       drop_last, static_cast<int32_t>(extra));
    int64_t total = sample_index_.shape()[0] - 1;
    shuffle_index_ = build_shuffle_index(separate ? samples_before_last : total, total, rng);

    log::info("Built the ", class_name(), " ", split_name(split_), " indices: ", total,
              " samples, ", num_epochs_, " epochs");
    if (!cache_dir_) return;
    std::error_code ec;
    fs::create_directories(*cache_dir_, ec);
    MT_CHECK(!ec, "cannot create the dataset index cache ", *cache_dir_, ": ", ec.message(),
             " (set --data-cache-path to a writable directory)");
    write_text_atomically(cache_path("description.txt"), unique_description_);
    document_index_.save(cache_path("document_index.npy"));
    sample_index_.save(cache_path("sample_index.npy"));
    shuffle_index_.save(cache_path("shuffle_index.npy"));
}

std::vector<int64_t> GPTDataset::text(int64_t i) const {
    return padded(read(i));
}

std::vector<int64_t> GPTDataset::padded(std::vector<int64_t> ids) const {
    const int64_t want = config_.sequence_length + (config_.add_extra_token_to_sequence ? 1 : 0);
    if (static_cast<int64_t>(ids.size()) < want)
        ids.resize(static_cast<size_t>(want), config_.pad_id);
    return ids;
}

std::vector<int64_t> GPTDataset::read(int64_t i) const {
    MT_CHECK(0 <= i && i < size(), "GPTDataset: sample ", i, " outside [0, ", size(), ")");
    const int64_t extra = config_.add_extra_token_to_sequence ? 1 : 0;
    int64_t j = shuffle_index_.at(i);
    int64_t d0 = sample_index_.at(2 * j), o0 = sample_index_.at(2 * j + 1);
    int64_t d1 = sample_index_.at(2 * j + 2), o1 = sample_index_.at(2 * j + 3);
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(config_.sequence_length + extra));
    auto append = [&](int64_t doc_pos, int64_t offset, int64_t length) {
        std::vector<int64_t> part = data_->get(document_index_.at(doc_pos), offset, length);
        out.insert(out.end(), part.begin(), part.end());
    };
    if (d0 == d1) {
        append(d0, o0, o1 - o0 + extra);
    } else {
        for (int64_t d = d0; d <= d1; ++d) {
            append(d, d == d0 ? o0 : 0, d < d1 ? -1 : o1 + extra);
        }
    }
    return out;
}

GPTSample GPTDataset::get(int64_t i) const {
    return sample_of(text(i));
}

GPTSample GPTDataset::sample_of(const std::vector<int64_t>& raw) const {
    const int64_t L = config_.sequence_length;
    GPTSample s;
    if (config_.add_extra_token_to_sequence) {
        s.tokens.assign(raw.begin(), raw.end() - 1);
        s.labels.assign(raw.begin() + 1, raw.end());
    } else {
        s.tokens = raw;
        s.labels.assign(raw.begin() + 1, raw.end());
        s.labels.push_back(config_.pad_id);
    }
    s.loss_mask.assign(static_cast<size_t>(L), 1.0f);
    s.position_ids.resize(static_cast<size_t>(L));
    s.document_start.assign(static_cast<size_t>(L), 0);
    // Positions and attention restart after every EOD among the input tokens.
    int64_t start = 0;
    for (int64_t q = 0; q < L; ++q) {
        s.position_ids[q] = config_.reset_position_ids ? q - start : q;
        if (config_.reset_attention_mask) s.document_start[q] = static_cast<int32_t>(start);
        if (s.tokens[q] == config_.eod_id) {
            if (config_.eod_mask_loss) s.loss_mask[q] = 0.0f;
            start = q + 1;
        }
    }
    for (int64_t q = 0; q < L; ++q) {
        if (s.labels[q] == config_.pad_id) {
            s.loss_mask[q] = 0.0f;
            s.labels[q] = 0;
        }
        if (s.tokens[q] == config_.pad_id) s.tokens[q] = 0;
    }
    return s;
}

Batch GPTSampleDataset::batch(std::span<const int64_t> indices) const {
    const int64_t B = int64_t(indices.size());
    Tensor tokens, labels, loss_mask, position_ids, document_start;
    for (int64_t b = 0; b < B; ++b) {
        const GPTSample s = get(indices[size_t(b)]);
        const int64_t len = int64_t(s.tokens.size());
        if (b == 0) {
            tokens = Tensor::empty({B, len}, DType::i64);
            labels = Tensor::empty({B, len}, DType::i64);
            loss_mask = Tensor::empty({B, len}, DType::f32);
            position_ids = Tensor::empty({B, len}, DType::i64);
            document_start = Tensor::empty({B, len}, DType::i32);
        }
        MT_CHECK(tokens.size(1) == len, "sample ", indices[size_t(b)], " has ", len,
                 " tokens, the batch ", tokens.size(1));
        std::copy(s.tokens.begin(), s.tokens.end(), tokens.data<int64_t>() + b * len);
        std::copy(s.labels.begin(), s.labels.end(), labels.data<int64_t>() + b * len);
        std::copy(s.loss_mask.begin(), s.loss_mask.end(), loss_mask.data<float>() + b * len);
        std::copy(s.position_ids.begin(), s.position_ids.end(),
                  position_ids.data<int64_t>() + b * len);
        std::copy(s.document_start.begin(), s.document_start.end(),
                  document_start.data<int32_t>() + b * len);
    }
    return {{"tokens", tokens},
            {"labels", labels},
            {"loss_mask", loss_mask},
            {"position_ids", position_ids},
            {"document_start", document_start}};
}

}  // namespace mt::data
