#include "register.h"

#include <memory>

#include "gpt_data.h"
#include "gpt_model.h"

namespace mt::plugins::gpt {

namespace {
class GptFamily final : public ModelFamily {
public:
  std::string_view name() const override { return "gpt"; }
  std::vector<FlagInfo> flags() const override {
    return nn::transformer_flags();
  }
  std::vector<FlagInfo> data_flags() const override { return gpt_data_flags(); }
  std::string default_tokenizer_type() const override {
    return "GPT2BPETokenizer";
  }
  std::array<std::shared_ptr<data::SampleDataset>, 3>
  datasets(const data::DatasetRequest &request) const override {
    return gpt_datasets(request);
  }
  ModelArgs resolved_args(const ModelArgs &args) const override {
    return nn::resolved_transformer_args(args, nn::read_transformer_args(args));
  }
  using ModelFamily::build;
  std::unique_ptr<Model> build(const ModelArgs &args,
                               const BuildContext &context) const override {
    return std::make_unique<GptModel>(nn::read_transformer_args(args), context,
                                      context.params_dtype);
  }
};
} // namespace

void register_gpt(Registry &registry) {
  registry.models().add("gpt", [] { return std::make_unique<GptFamily>(); });
}

} // namespace mt::plugins::gpt
