#include "gpt_data.h"

#include "mt/data/gpt_dataset_builder.h"
#include "mt/data/gpt_fim_dataset.h"
#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::gpt {

std::vector<FlagInfo> gpt_data_flags(bool fim) {
    std::vector<FlagInfo> flags = {
        {"reset-position-ids", "restart position ids after each EOD", std::nullopt, true},
        {"reset-attention-mask", "no attention across EOD tokens", std::nullopt, true},
        {"eod-mask-loss", "no loss on EOD tokens", std::nullopt, true},
        {"num-workers",
         "Megatron's data-loader worker processes: megatron-train reads in the training "
         "process, in the same order; with --fim-data each worker's random draws are kept "
         "apart, as Megatron's workers' copies of the dataset keep them",
         "2"}};
    if (!fim) return flags;
    const std::vector<FlagInfo> fim_flags = {
        {"fim-data",
         "(core_v0.19) fill-in-the-middle samples (GPTFIMDataset): each EOD-separated "
         "segment cut into prefix, middle and suffix by text and reordered (PSM or SPM)",
         std::nullopt, true},
        {"fim-rate", "probability that a segment is reordered", "0.5"},
        {"fim-spm-rate", "probability that a reordered segment is SPM (else PSM)", "0.5"},
        {"fim-split-sample",
         "a token the segments are also cut at (each fragment reordered "
         "with --fim-fragment-rate)"},
        {"fim-fragment-rate", "probability that a fragment is reordered"},
        {"fim-no-prefix", "segments whose text starts with this are left as they are"},
        {"fim-prefix-token", "the prefix sentinel", "<fim_prefix>"},
        {"fim-middle-token", "the middle sentinel", "<fim_middle>"},
        {"fim-suffix-token", "the suffix sentinel", "<fim_suffix>"},
        {"fim-pad-token", "pads a sample back to its length", "<fim_pad>"},
        {"fim-eod-token", "the end of a segment", "<|endoftext|>"}};
    flags.insert(flags.end(), fim_flags.begin(), fim_flags.end());
    return flags;
}

namespace {

// The --fim-* flags.
data::FimConfig fim_config(const ModelArgsReader& flags) {
    data::FimConfig f;
    f.rate = flags.real("fim-rate", f.rate);
    f.spm_rate = flags.real("fim-spm-rate", f.spm_rate);
    if (flags.has("fim-split-sample")) f.split_sample = flags.text("fim-split-sample");
    if (flags.has("fim-fragment-rate")) f.fragment_rate = flags.real("fim-fragment-rate", 0.0);
    if (flags.has("fim-no-prefix")) f.no_prefix = flags.text("fim-no-prefix");
    for (auto [name, value] :
         {std::pair{"fim-prefix-token", &f.prefix_token},
          std::pair{"fim-middle-token", &f.middle_token},
          std::pair{"fim-suffix-token", &f.suffix_token}, std::pair{"fim-pad-token", &f.pad_token},
          std::pair{"fim-eod-token", &f.eod_token}})
        if (flags.has(name)) *value = flags.text(name);
    f.num_workers = flags.integer("num-workers", f.num_workers);
    // Megatron's validate_args.
    MT_CHECK(f.rate != 0.0, "--fim-rate should be specified.");
    MT_CHECK(f.spm_rate != 0.0, "--fim-spm-rate should be specified.");
    return f;
}

}  // namespace

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
    c.fim = flags.flag("fim-data");
    MT_CHECK(!c.fim || !c.mock, "Mock dataset is not supported with FIM dataset.");
    data::GPTDatasetWrap wrap;
    if (c.fim) {
        const data::FimConfig fim = fim_config(flags);
        // (Each epoch's new iterator gives batch 0 to worker 0 again, while the workers keep
        // their draws; the streams here take batch k to worker k mod N throughout.)
        MT_CHECK(!request.cyclic_loader || fim.num_workers <= 1,
                 "not supported yet: --fim-data with --dataloader-type cyclic and --num-workers ",
                 fim.num_workers, " (Megatron's data loader restarts its workers' turns at each "
                 "epoch; --num-workers 0 or 1 reads as Megatron does)");
        const uint32_t seed = c.random_seed;
        wrap = [fim, seed, &tokenizer](std::shared_ptr<const data::GPTDataset> gpt) {
            return std::make_shared<data::GPTFIMDataset>(std::move(gpt), tokenizer, fim, seed);
        };
    }
    const auto built = data::build_gpt_datasets(c, request.num_samples, wrap);
    return {built[0], built[1], built[2]};
}

}  // namespace mt::plugins::gpt
