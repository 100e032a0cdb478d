// BERTMaskedWordPieceDataset of megatron/core/datasets/bert_dataset.py and its base
// masked_dataset.py (core_v0.13.0): cache key, sample index and per-sample draws.
#include "mt/data/bert_dataset.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "mt/data/bert_sample_mapping.h"
#include "mt/data/masked_lm.h"
#include "mt/data/numpy_random.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/log.h"

namespace mt::data {

namespace fs = std::filesystem;

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
    : data_(std::move(data)),
      dataset_path_(std::move(dataset_path)),
      begin_(begin),
      end_(end),
      num_samples_(num_samples),
      split_(split),
      config_(config) {
    MT_CHECK(data_ != nullptr, "BERTMaskedWordPieceDataset: no indexed dataset");
    MT_CHECK(0 <= begin_ && begin_ < end_ && end_ <= data_->num_documents(),
             "BERTMaskedWordPieceDataset ", dataset_path_, " (", split_name(split_),
             "): document range [", begin_, ", ", end_, ") is empty or outside the ",
             data_->num_documents(), " documents");
    MT_CHECK(!num_samples_ || *num_samples_ >= 0, "BERTMaskedWordPieceDataset: num_samples ",
             *num_samples_, " is negative");
    MT_CHECK(config_.sequence_length > 4 &&
                 config_.sequence_length - 3 <= std::numeric_limits<int32_t>::max(),
             "BERTMaskedWordPieceDataset: sequence_length ", config_.sequence_length,
             " must leave room for [CLS], two [SEP] and two tokens");
    MT_CHECK(config_.masking_probability > 0.0 && config_.masking_probability < 1.0,
             "BERTMaskedWordPieceDataset: masking_probability ", config_.masking_probability,
             " outside (0, 1)");
    MT_CHECK(config_.masking_max_ngram > 0, "BERTMaskedWordPieceDataset: masking_max_ngram ",
             config_.masking_max_ngram, " must be > 0");
    MT_CHECK(!config_.inv_vocab.empty(),
             "BERTMaskedWordPieceDataset: the tokenizer's inv_vocab "
             "is empty");

    // Megatron's inv_vocab is {id: piece} inverted from {piece: id}; a repeated piece would
    // leave holes in it (and move add_token's ids), which this dense table cannot express.
    std::unordered_set<std::string_view> seen;
    continuation_.resize(config_.inv_vocab.size());
    token_lookup_.resize(config_.inv_vocab.size());
    for (size_t id = 0; id < config_.inv_vocab.size(); ++id) {
        const std::string& piece = config_.inv_vocab[id];
        MT_CHECK(seen.insert(piece).second, "BERTMaskedWordPieceDataset: vocabulary piece '", piece,
                 "' (id ", id,
                 ") repeats; vocabularies with repeated pieces are not "
                 "supported");
        continuation_[id] = piece.starts_with("##") ? 1 : 0;
        token_lookup_[id] = static_cast<int64_t>(id);
    }

    unique_identifiers_ = dataset_identifiers(
        {class_name(), dataset_path_, num_samples_, split_, config_.random_seed,
         config_.sequence_length, config_.split, config_.split_matrix(), config_.tokenizer});
    unique_identifiers_.set("masking_probability", JsonValue::real(config_.masking_probability));
    unique_identifiers_.set("short_sequence_probability",
                            JsonValue::real(config_.short_sequence_probability));
    unique_identifiers_.set("masking_max_ngram", JsonValue::integer(config_.masking_max_ngram));
    unique_identifiers_.set("masking_do_full_word", JsonValue::boolean(true));
    unique_identifiers_.set("masking_do_permutation", JsonValue::boolean(false));
    unique_identifiers_.set("masking_use_longer_ngrams", JsonValue::boolean(false));
    unique_identifiers_.set("masking_use_geometric_distribution", JsonValue::boolean(false));
    unique_identifiers_.set("classification_head", JsonValue::boolean(config_.classification_head));
    unique_description_ = unique_identifiers_.dumps();
    unique_description_hash_ = md5_hex(unique_description_);

    if (config_.path_to_cache) {
        cache_dir_ = *config_.path_to_cache;
    } else {
        // Megatron joins the low-level dataset's path_prefix (the prefix it was opened with).
        std::string prefix = data_->idx_file().path().string();
        prefix.resize(prefix.size() - 4);  // ".idx"
        cache_dir_ =
            (fs::path(prefix) / "cache" / (std::string(class_name()) + "_indices")).string();
    }
    build_sample_index();
}

std::string BertMaskedWordPieceDataset::cache_path(const std::string& suffix) const {
    return (fs::path(cache_dir_) / (unique_description_hash_ + "-" + class_name() + "-" + suffix))
        .string();
}

void BertMaskedWordPieceDataset::build_sample_index() {
    const std::string description_path = cache_path("description.txt");
    const std::string index_path = cache_path("sample_index.npy");
    if (fs::is_regular_file(description_path) && fs::is_regular_file(index_path)) {
        sample_index_ = NpyArray::load(index_path);
        MT_CHECK(sample_index_.type() == NpyType::u32 && sample_index_.shape().size() == 2 &&
                     sample_index_.shape()[1] == 3,
                 "BERTMaskedWordPieceDataset cache ", index_path,
                 ": expected a uint32 [N, 3] sample index");
        loaded_from_cache_ = true;
        log::info("Load the ", class_name(), " ", split_name(split_), " indices from ", cache_dir_);
        return;
    }

    std::vector<int64_t> boundaries;
    boundaries.reserve(static_cast<size_t>(end_ - begin_ + 1));
    for (int64_t d = begin_; d <= end_; ++d) boundaries.push_back(data_->document_index(d));
    std::vector<int32_t> sizes(static_cast<size_t>(data_->num_sequences()));
    for (int64_t i = 0; i < data_->num_sequences(); ++i) sizes[i] = data_->sequence_length(i);

    // With a sample count Megatron allows up to 2^31 - 2 epochs and stops once it is reached.
    const int32_t num_epochs = num_samples_ ? std::numeric_limits<int32_t>::max() - 1 : 1;
    const uint64_t max_samples =
        num_samples_ ? static_cast<uint64_t>(*num_samples_) : std::numeric_limits<uint64_t>::max();
    MT_CHECK(config_.random_seed > 0 &&
                 config_.random_seed < static_cast<uint32_t>(std::numeric_limits<int32_t>::max()),
             "BERTMaskedWordPieceDataset: --seed ", config_.random_seed,
             " must be in [1, 2^31 - 2] (Megatron's build_mapping)");
    // One [CLS] and two [SEP] come on top of the sentences.
    sample_index_ = build_bert_sample_mapping(
        boundaries, sizes, num_epochs, max_samples,
        static_cast<int32_t>(config_.sequence_length - 3), config_.short_sequence_probability,
        static_cast<int32_t>(config_.random_seed), config_.classification_head ? 2 : 1);
    log::info("Built the ", class_name(), " ", split_name(split_), " indices: ", size(),
              " samples");

    std::error_code ec;
    fs::create_directories(cache_dir_, ec);
    MT_CHECK(!ec, "cannot create the dataset index cache ", cache_dir_, ": ", ec.message(),
             " (set --data-cache-path to a writable directory)");
    io::AtomicFile description(description_path);
    description.stream() << unique_description_;
    description.commit();
    sample_index_.save(index_path);
}

BertSample BertMaskedWordPieceDataset::get(int64_t i) const {
    MT_CHECK(0 <= i && i < size(), "BERTMaskedWordPieceDataset: sample ", i, " outside [0, ",
             size(), ")");
    const int64_t first = sample_index_.at(3 * i), last = sample_index_.at(3 * i + 1);
    const int64_t target = sample_index_.at(3 * i + 2);
    const int64_t L = config_.sequence_length;
    MT_CHECK(first < last && last <= data_->num_sequences() && target <= L,
             "BERTMaskedWordPieceDataset: sample index row ", i, " (", first, ", ", last, ", ",
             target, ") does not fit the dataset (", data_->num_sequences(),
             " sentences, sequence length ", L, ")");
    NumpyRandomState rng(
        static_cast<uint32_t>((config_.random_seed + static_cast<uint64_t>(i)) & 0xffffffffULL));

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
        std::vector<int64_t> sentence = data_->get(s);
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

    MaskedLmOptions options;
    options.masking_probability = config_.masking_probability;
    options.max_ngram = config_.masking_max_ngram;
    options.cls_id = config_.cls_id;
    options.sep_id = config_.sep_id;
    options.continuation = continuation_;
    const int64_t mask_id = config_.mask_id;
    const std::span<const int64_t> lookup = token_lookup_;
    MaskedLmPredictions masked = create_masked_lm_predictions(
        tokens, target, rng, options,
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
