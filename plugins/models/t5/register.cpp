#include "register.h"

#include <memory>

#include "t5_config.h"
#include "t5_data.h"
#include "t5_model.h"

namespace mt::plugins::t5 {

namespace {
class T5Family final : public ModelFamily {
  public:
    std::string_view name() const override { return "t5"; }
    std::vector<FlagInfo> flags() const override { return t5_flags(); }
    std::vector<FlagInfo> data_flags() const override { return t5_data_flags(); }
    std::string default_tokenizer_type() const override { return "BertWordPieceLowerCase"; }
    ModelArgs resolved_args(const ModelArgs& args) const override { return t5_resolved_args(args); }
    using ModelFamily::build;
    std::unique_ptr<Model> build(const ModelArgs& args,
                                 const BuildContext& context) const override {
        return std::make_unique<T5Model>(t5_config_from_args(args), context, context.params_dtype);
    }
    std::array<std::shared_ptr<data::SampleDataset>, 3> datasets(
        const data::DatasetRequest& request) const override {
        return t5_datasets(request);
    }
};
}  // namespace

void register_t5(Registry& registry) {
    registry.models().add("t5", [] { return std::make_unique<T5Family>(); });
}

}  // namespace mt::plugins::t5
