#include "bert_data.h"

#include <string>

#include "mt/data/bert_dataset.h"
#include "mt/data/indexed_dataset.h"
#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::bert {

namespace {

// --mask-prob / --short-seq-prob: a number in [0, 1].
double probability(const ModelArgs& args, const char* name, double fallback) {
    const double p = ModelArgsReader(args).real(name, fallback);
    MT_CHECK(p >= 0 && p <= 1, "--", name, " ", p, ": not a probability");
    return p;
}

// The one prefix of a blend without weights (blends of BERT datasets are not supported yet).
const std::string& single_prefix(const data::Blend& blend, const char* flag) {
    MT_CHECK(blend.prefixes.size() == 1 && !blend.weights, flag,
             ": not supported yet: blended BERT datasets (several prefixes or weights)");
    return blend.prefixes[0];
}

}  // namespace

std::vector<FlagInfo> bert_data_flags() {
    return {{"mask-prob", "probability of replacing a word with [MASK]", "0.15"},
            {"short-seq-prob", "probability of a shorter target sequence", "0.1"}};
}

std::array<std::shared_ptr<data::SampleDataset>, 3> bert_datasets(
    const data::DatasetRequest& request) {
    MT_CHECK(!request.mock,
             "not supported yet: --mock-data for BERT (Megatron has no mock BERT "
             "dataset)");
    MT_CHECK(request.tokenizer, "BERT datasets need the tokenizer");
    const Tokenizer& tokenizer = *request.tokenizer;
    data::BertDatasetConfig c;
    c.random_seed = request.random_seed;
    c.sequence_length = request.sequence_length;
    c.split = request.split;
    c.path_to_cache = request.path_to_cache;
    c.masking_probability = probability(request.args, "mask-prob", 0.15);
    c.short_sequence_probability = probability(request.args, "short-seq-prob", 0.1);
    c.classification_head = !ModelArgsReader(request.args).flag("bert-no-binary-head");
    const SpecialIds& ids = tokenizer.special_ids();
    auto special = [&](const std::optional<int32_t>& id, const char* what) {
        MT_CHECK(id && *id >= 0, "BERT data needs the tokenizer's ", what, " token; ",
                 tokenizer.name(), " has none");
        return int64_t(*id);
    };
    c.cls_id = special(ids.cls, "[CLS]");
    c.sep_id = special(ids.sep, "[SEP]");
    c.mask_id = special(ids.mask, "[MASK]");
    c.pad_id = special(ids.pad, "[PAD]");
    c.inv_vocab = tokenizer.vocabulary();
    c.tokenizer = tokenizer.dataset_identity();

    std::array<std::shared_ptr<data::SampleDataset>, 3> out;
    auto build = [&](const std::string& prefix, int split, const data::Bookend& bookend) {
        auto corpus =
            std::make_shared<const data::IndexedDataset>(data::IndexedDataset::open(prefix));
        // Megatron splits a masked dataset by documents (a document's sentences stay together).
        const auto [begin, end] = data::split_range(bookend, corpus->num_documents());
        out[size_t(split)] = std::make_shared<data::BertMaskedWordPieceDataset>(
            corpus, prefix, begin, end, request.num_samples[size_t(split)],
            static_cast<data::Split>(split), c);
    };
    if (request.blend) {
        MT_CHECK(c.split.has_value(), "--split is required with --data-path");
        const std::string& prefix = single_prefix(*request.blend, "--data-path");
        const data::SplitMatrix matrix = *c.split_matrix();
        for (int i = 0; i < data::kNumSplits; ++i)
            if (matrix[size_t(i)]) build(prefix, i, *matrix[size_t(i)]);
        return out;
    }
    bool any = false;
    for (int i = 0; i < data::kNumSplits; ++i) {
        const auto& blend = request.blend_per_split[size_t(i)];
        if (!blend) continue;
        any = true;
        build(single_prefix(*blend, "--train/valid/test-data-path"), i,
              data::Bookend{0.0, 1.0, false});
    }
    MT_CHECK(any, "no data: give --data-path or per-split data paths");
    return out;
}

}  // namespace mt::plugins::bert
