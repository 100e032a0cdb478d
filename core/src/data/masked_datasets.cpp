#include "mt/data/masked_datasets.h"

#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::data {

namespace {

// --mask-prob / --short-seq-prob: a number in [0, 1].
double probability(const ModelArgs& args, const char* name, double fallback) {
    const double p = ModelArgsReader(args).real(name, fallback);
    MT_CHECK(p >= 0 && p <= 1, "--", name, " ", p, ": not a probability");
    return p;
}

}  // namespace

std::vector<FlagInfo> masked_data_flags() {
    return {{"mask-prob", "probability of replacing a word with [MASK]", "0.15"},
            {"short-seq-prob", "probability of a shorter target sequence", "0.1"}};
}

void read_masked_request(const DatasetRequest& request, const char* family,
                         MaskedWordPieceDatasetConfig& c) {
    MT_CHECK(!request.mock, "not supported yet: --mock-data for ", family,
             " (Megatron has no mock ", family, " dataset)");
    MT_CHECK(request.tokenizer, family, " datasets need the tokenizer");
    const Tokenizer& tokenizer = *request.tokenizer;
    static_cast<BlendedMegatronDatasetConfig&>(c) = request.config;
    c.masking_probability = probability(request.args, "mask-prob", 0.15);
    c.short_sequence_probability = probability(request.args, "short-seq-prob", 0.1);
    const SpecialIds& ids = tokenizer.special_ids();
    auto special = [&](const std::optional<int32_t>& id, const char* what) {
        MT_CHECK(id && *id >= 0, family, " data needs the tokenizer's ", what, " token; ",
                 tokenizer.name(), " has none");
        return int64_t(*id);
    };
    c.cls_id = special(ids.cls, "[CLS]");
    c.sep_id = special(ids.sep, "[SEP]");
    c.mask_id = special(ids.mask, "[MASK]");
    c.pad_id = special(ids.pad, "[PAD]");
    c.inv_vocab = tokenizer.vocabulary();
}

}  // namespace mt::data
