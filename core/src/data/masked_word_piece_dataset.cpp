// masked_dataset.py's MaskedWordPieceDataset (core_v0.13.0): the vocabulary checks, cache key
// and sample index BERT's and T5's datasets share.
#include "mt/data/masked_word_piece_dataset.h"

#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "mt/data/bert_sample_mapping.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/log.h"

namespace mt::data {

namespace fs = std::filesystem;

MaskedWordPieceDataset::MaskedWordPieceDataset(
    const char* class_name, std::shared_ptr<const IndexedDataset> data, std::string dataset_path,
    int64_t begin, int64_t end, std::optional<int64_t> num_samples, Split split,
    const MaskedWordPieceDatasetConfig& config,
    const std::vector<std::pair<std::string, JsonValue>>& extra_identifiers,
    int64_t reserved_tokens, int32_t min_sentences)
    : class_name_(class_name),
      data_(std::move(data)),
      dataset_path_(std::move(dataset_path)),
      begin_(begin),
      end_(end),
      num_samples_(num_samples),
      split_(split),
      masked_(config) {
    MT_CHECK(data_ != nullptr, class_name_, ": no indexed dataset");
    MT_CHECK(0 <= begin_ && begin_ < end_ && end_ <= data_->num_documents(), class_name_, " ",
             dataset_path_, " (", split_name(split_), "): document range [", begin_, ", ", end_,
             ") is empty or outside the ", data_->num_documents(), " documents");
    MT_CHECK(!num_samples_ || *num_samples_ >= 0, class_name_, ": num_samples ", *num_samples_,
             " is negative");
    MT_CHECK(masked_.sequence_length > reserved_tokens + 1 &&
                 masked_.sequence_length - reserved_tokens <= std::numeric_limits<int32_t>::max(),
             class_name_, ": sequence_length ", masked_.sequence_length, " must leave room for ",
             reserved_tokens, " special tokens and two tokens");
    MT_CHECK(masked_.masking_probability > 0.0 && masked_.masking_probability < 1.0, class_name_,
             ": masking_probability ", masked_.masking_probability, " outside (0, 1)");
    MT_CHECK(masked_.masking_max_ngram > 0, class_name_, ": masking_max_ngram ",
             masked_.masking_max_ngram, " must be > 0");
    MT_CHECK(!masked_.inv_vocab.empty(), class_name_, ": the tokenizer's inv_vocab is empty");

    // Megatron's inv_vocab is {id: piece} inverted from {piece: id}; a repeated piece would
    // leave holes in it (and move add_token's ids), which this dense table cannot express.
    std::unordered_set<std::string_view> seen;
    continuation_.resize(masked_.inv_vocab.size());
    token_lookup_.resize(masked_.inv_vocab.size());
    for (size_t id = 0; id < masked_.inv_vocab.size(); ++id) {
        const std::string& piece = masked_.inv_vocab[id];
        MT_CHECK(seen.insert(piece).second, class_name_, ": vocabulary piece '", piece, "' (id ",
                 id, ") repeats; vocabularies with repeated pieces are not supported");
        continuation_[id] = piece.starts_with("##") ? 1 : 0;
        token_lookup_[id] = static_cast<int64_t>(id);
    }

    unique_identifiers_ = dataset_identifiers(
        {class_name_, dataset_path_, num_samples_, split_, masked_.random_seed,
         masked_.sequence_length, masked_.split, masked_.split_matrix(), masked_.tokenizer});
    unique_identifiers_.set("masking_probability", JsonValue::real(masked_.masking_probability));
    unique_identifiers_.set("short_sequence_probability",
                            JsonValue::real(masked_.short_sequence_probability));
    unique_identifiers_.set("masking_max_ngram", JsonValue::integer(masked_.masking_max_ngram));
    unique_identifiers_.set("masking_do_full_word", JsonValue::boolean(true));
    unique_identifiers_.set("masking_do_permutation", JsonValue::boolean(false));
    unique_identifiers_.set("masking_use_longer_ngrams", JsonValue::boolean(false));
    unique_identifiers_.set("masking_use_geometric_distribution",
                            JsonValue::boolean(masked_.masking_use_geometric_distribution));
    for (const auto& [key, value] : extra_identifiers) unique_identifiers_.set(key, value);
    unique_description_ = unique_identifiers_.dumps();
    unique_description_hash_ = md5_hex(unique_description_);

    if (masked_.path_to_cache) {
        cache_dir_ = *masked_.path_to_cache;
    } else {
        // Megatron joins the low-level dataset's path_prefix (the prefix it was opened with).
        std::string prefix = data_->idx_file().path().string();
        prefix.resize(prefix.size() - 4);  // ".idx"
        cache_dir_ =
            (fs::path(prefix) / "cache" / (std::string(class_name_) + "_indices")).string();
    }
    build_sample_index(reserved_tokens, min_sentences);
}

std::string MaskedWordPieceDataset::cache_path(const std::string& suffix) const {
    return (fs::path(cache_dir_) / (unique_description_hash_ + "-" + class_name_ + "-" + suffix))
        .string();
}

void MaskedWordPieceDataset::build_sample_index(int64_t reserved_tokens, int32_t min_sentences) {
    const std::string description_path = cache_path("description.txt");
    const std::string index_path = cache_path("sample_index.npy");
    if (fs::is_regular_file(description_path) && fs::is_regular_file(index_path)) {
        sample_index_ = NpyArray::load(index_path);
        MT_CHECK(sample_index_.type() == NpyType::u32 && sample_index_.shape().size() == 2 &&
                     sample_index_.shape()[1] == 3,
                 class_name_, " cache ", index_path, ": expected a uint32 [N, 3] sample index");
        loaded_from_cache_ = true;
        log::info("Load the ", class_name_, " ", split_name(split_), " indices from ", cache_dir_);
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
    MT_CHECK(masked_.random_seed > 0 &&
                 masked_.random_seed < static_cast<uint32_t>(std::numeric_limits<int32_t>::max()),
             class_name_, ": --seed ", masked_.random_seed,
             " must be in [1, 2^31 - 2] (Megatron's build_mapping)");
    sample_index_ =
        build_bert_sample_mapping(boundaries, sizes, num_epochs, max_samples,
                                  static_cast<int32_t>(masked_.sequence_length - reserved_tokens),
                                  masked_.short_sequence_probability,
                                  static_cast<int32_t>(masked_.random_seed), min_sentences);
    log::info("Built the ", class_name_, " ", split_name(split_), " indices: ", size(), " samples");

    std::error_code ec;
    fs::create_directories(cache_dir_, ec);
    MT_CHECK(!ec, "cannot create the dataset index cache ", cache_dir_, ": ", ec.message(),
             " (set --data-cache-path to a writable directory)");
    io::AtomicFile description(description_path);
    description.stream() << unique_description_;
    description.commit();
    sample_index_.save(index_path);
}

MaskedWordPieceDataset::SampleRow MaskedWordPieceDataset::row(int64_t i) const {
    MT_CHECK(0 <= i && i < size(), class_name_, ": sample ", i, " outside [0, ", size(), ")");
    const SampleRow r{sample_index_.at(3 * i), sample_index_.at(3 * i + 1),
                      sample_index_.at(3 * i + 2)};
    MT_CHECK(
        r.first < r.last && r.last <= data_->num_sequences() && r.target <= masked_.sequence_length,
        class_name_, ": sample index row ", i, " (", r.first, ", ", r.last, ", ", r.target,
        ") does not fit the dataset (", data_->num_sequences(), " sentences, sequence length ",
        masked_.sequence_length, ")");
    return r;
}

NumpyRandomState MaskedWordPieceDataset::random_state(int64_t i) const {
    return NumpyRandomState(
        static_cast<uint32_t>((masked_.random_seed + static_cast<uint64_t>(i)) & 0xffffffffULL));
}

MaskedLmOptions MaskedWordPieceDataset::masking_options() const {
    MaskedLmOptions options;
    options.masking_probability = masked_.masking_probability;
    options.max_ngram = masked_.masking_max_ngram;
    options.geometric = masked_.masking_use_geometric_distribution;
    options.cls_id = masked_.cls_id;
    options.sep_id = masked_.sep_id;
    options.continuation = continuation_;
    return options;
}

}  // namespace mt::data
