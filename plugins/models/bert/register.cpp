#include "register.h"

#include <memory>

#include "bert_data.h"
#include "bert_model.h"

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
        ModelArgs out = nn::resolved_transformer_args(args, c.transformer);
        out["num-tokentypes"] = std::to_string(c.num_tokentypes);
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
