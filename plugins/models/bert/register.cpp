#include "register.h"

#include <memory>

#include "bert_data.h"
#include "bert_model.h"
#include "mt/nn/parameter.h"

namespace mt::plugins::bert {

namespace {
class BertFamily final : public ModelFamily {
  public:
    std::string_view name() const override { return "bert"; }
    std::vector<FlagInfo> flags() const override { return bert_flags(); }
    std::vector<FlagInfo> data_flags() const override { return bert_data_flags(); }
    std::string default_tokenizer_type() const override { return "BertWordPieceLowerCase"; }
    ModelArgs resolved_args(const ModelArgs& args) const override {
        const BertConfig c = bert_config_from_args(args);
        ModelArgs out = args;
        out["ffn-hidden-size"] = std::to_string(c.transformer.ffn_hidden_size);
        out["kv-channels"] = std::to_string(c.transformer.kv_channels);
        out["seq-length"] = std::to_string(c.transformer.seq_length);
        out["padded-vocab-size"] = std::to_string(c.transformer.padded_vocab_size);
        out["num-tokentypes"] = std::to_string(c.num_tokentypes);
        return out;
    }
    // Listed from a whole model (zero pages: address space, not memory).
    std::vector<ParameterInfo> parameters(const ModelArgs& args) const override {
        BertModel model(bert_config_from_args(args), single_process_context());
        std::vector<ParameterInfo> out;
        for (const nn::Parameter* p : model.parameters()) out.push_back(nn::describe(*p));
        return out;
    }
    using ModelFamily::build;
    std::unique_ptr<Model> build(const ModelArgs& args,
                                 const BuildContext& context) const override {
        return std::make_unique<BertModel>(bert_config_from_args(args), context,
                                           context.params_dtype);
    }
    std::array<std::shared_ptr<data::SampleDataset>, 3> datasets(
        const data::DatasetRequest& request) const override {
        return bert_datasets(request);
    }
};
}  // namespace

void register_bert(Registry& registry) {
    registry.models().add("bert", [] { return std::make_unique<BertFamily>(); });
}

}  // namespace mt::plugins::bert
