#include "gpt_data.h"

#include "mt/data/gpt_dataset_builder.h"
#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::gpt {

std::vector<FlagInfo> gpt_data_flags() {
    return {{"reset-position-ids", "restart position ids after each EOD", std::nullopt, true},
            {"reset-attention-mask", "no attention across EOD tokens", std::nullopt, true},
            {"eod-mask-loss", "no loss on EOD tokens", std::nullopt, true}};
}

std::array<std::shared_ptr<data::SampleDataset>, 3> gpt_datasets(
    const data::DatasetRequest& request) {
    MT_CHECK(request.tokenizer, "GPT datasets need the tokenizer");
    const Tokenizer& tokenizer = *request.tokenizer;
    data::GPTDatasetConfig c;
    static_cast<data::BlendedMegatronDatasetConfig&>(c) = request.config;
    c.mock = request.mock;
    const ModelArgsReader flags(request.args);
    c.reset_position_ids = flags.flag("reset-position-ids");
    c.reset_attention_mask = flags.flag("reset-attention-mask");
    c.eod_mask_loss = flags.flag("eod-mask-loss");
    c.eod_id = tokenizer.eod();
    c.vocab_size = tokenizer.vocab_size();
    c.pad_id = tokenizer.special_ids().pad.value_or(-1);
    const auto built = data::build_gpt_datasets(c, request.num_samples);
    return {built[0], built[1], built[2]};
}

}  // namespace mt::plugins::gpt
