#include "register.h"

#include <memory>

#include "gpt_model.h"
#include "gpt_parameters.h"

namespace mt::plugins::gpt {

namespace {
class GptFamily final : public ModelFamily {
  public:
    std::string_view name() const override { return "gpt"; }
    std::vector<FlagInfo> flags() const override { return gpt_flags(); }
    std::vector<ParameterInfo> parameters(const ModelArgs& args) const override {
        return gpt_parameters(gpt_config_from_args(args));
    }
    std::unique_ptr<Model> build(const ModelArgs& args) const override {
        return std::make_unique<GptModel>(gpt_config_from_args(args));
    }
};
}  // namespace

void register_gpt(Registry& registry) {
    registry.models().add("gpt", [] { return std::make_unique<GptFamily>(); });
}

}  // namespace mt::plugins::gpt
