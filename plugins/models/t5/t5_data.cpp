#include "t5_data.h"

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
    const std::vector<int32_t> sentinels = sentinel_ids(tokenizer);
    c.sentinel_ids.assign(sentinels.begin(), sentinels.end());
    return data::masked_datasets<data::T5MaskedWordPieceDataset>(request, c);
}

}  // namespace mt::plugins::t5
