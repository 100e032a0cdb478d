#include "t5_data.h"

#include <string>
#include <unordered_map>

#include "mt/data/masked_datasets.h"
#include "mt/data/t5_dataset.h"
#include "mt/error.h"
#include "t5_config.h"

namespace mt::plugins::t5 {

std::vector<FlagInfo> t5_data_flags() {
    return data::masked_data_flags();
}

std::array<std::shared_ptr<data::SampleDataset>, 3> t5_datasets(
    const data::DatasetRequest& request) {
    data::T5DatasetConfig c;
    data::read_masked_request(request, "T5", c);
    const T5Config model = t5_config_from_args(request.args);
    MT_CHECK(model.decoder_seq_length > 0, "T5 data needs --decoder-seq-length");
    c.sequence_length = model.encoder_seq_length;
    c.sequence_length_decoder = model.decoder_seq_length;
    const Tokenizer& tokenizer = *request.tokenizer;
    const SpecialIds& ids = tokenizer.special_ids();
    MT_CHECK(ids.bos && ids.eos, "T5 data needs the tokenizer's [BOS] and [EOS]; ",
             tokenizer.name(), " has none");
    c.bos_id = *ids.bos;
    c.eos_id = *ids.eos;
    // The tokenizer's additional_special_tokens_ids: <extra_id_0>, <extra_id_1>, ... in order.
    std::unordered_map<std::string, int64_t> id_of;
    for (size_t id = 0; id < c.inv_vocab.size(); ++id) id_of.emplace(c.inv_vocab[id], id);
    for (int64_t n = 0;; ++n) {
        const auto it = id_of.find("<extra_id_" + std::to_string(n) + ">");
        if (it == id_of.end()) break;
        c.sentinel_ids.push_back(it->second);
    }
    return data::masked_datasets<data::T5MaskedWordPieceDataset>(request, c);
}

}  // namespace mt::plugins::t5
