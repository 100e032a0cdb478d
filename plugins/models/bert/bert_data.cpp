#include "bert_data.h"

#include <string>

#include "mt/data/bert_dataset.h"
#include "mt/data/blended_megatron_dataset_builder.h"
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
    static_cast<data::BlendedMegatronDatasetConfig&>(c) = request.config;
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

    // Megatron splits a masked dataset by documents (a document's sentences stay together).
    auto build_splits = [&](const std::string& prefix, const data::SplitMatrix& matrix,
                            const data::SplitSizes& sizes) {
        auto corpus =
            std::make_shared<const data::IndexedDataset>(data::IndexedDataset::open(prefix));
        std::array<std::optional<data::BlendPart>, data::kNumSplits> out;
        for (int i = 0; i < data::kNumSplits; ++i) {
            if (!matrix[size_t(i)]) continue;
            const auto [begin, end] =
                data::split_range(*matrix[size_t(i)], corpus->num_documents());
            auto dataset = std::make_shared<data::BertMaskedWordPieceDataset>(
                corpus, prefix, begin, end, sizes[size_t(i)], static_cast<data::Split>(i), c);
            out[size_t(i)] = data::BlendPart{dataset, dataset->unique_identifiers()};
        }
        return out;
    };
    const auto built = data::build_blended_megatron_datasets(c, request.num_samples, build_splits);
    return {built[0], built[1], built[2]};
}

}  // namespace mt::plugins::bert
