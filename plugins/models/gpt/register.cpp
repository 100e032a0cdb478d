#include "register.h"

#include <memory>

#include "gpt_data.h"
#include "gpt_model.h"
#include "mt/nn/parameter.h"

namespace mt::plugins::gpt {

namespace {
class GptFamily final : public ModelFamily {
  public:
    std::string_view name() const override { return "gpt"; }
    std::vector<FlagInfo> flags() const override { return gpt_flags(); }
    std::vector<FlagInfo> data_flags() const override { return gpt_data_flags(); }
    std::string default_tokenizer_type() const override { return "GPT2BPETokenizer"; }
    std::array<std::shared_ptr<data::SampleDataset>, 3> datasets(
        const data::DatasetRequest& request) const override {
        return gpt_datasets(request);
    }
    ModelArgs resolved_args(const ModelArgs& args) const override {
        const GptConfig c = gpt_config_from_args(args);
        ModelArgs out = args;
        out["ffn-hidden-size"] = std::to_string(c.ffn_hidden_size);
        out["kv-channels"] = std::to_string(c.kv_channels);
        out["seq-length"] = std::to_string(c.seq_length);
        out["padded-vocab-size"] = std::to_string(c.padded_vocab_size);
        // Megatron keeps --num-query-groups as given unless --group-query-attention uses it.
        if (args.count("group-query-attention"))
            out["num-query-groups"] = std::to_string(c.num_query_groups);
        return out;
    }
    // The modules state the parameters once: a whole model is built (its zero tensors are
    // untouched pages, so this costs address space, not memory) and listed.
    std::vector<ParameterInfo> parameters(const ModelArgs& args) const override {
        GptModel model(gpt_config_from_args(args), single_process_context());
        std::vector<ParameterInfo> out;
        for (const nn::Parameter* p : model.parameters()) out.push_back(nn::describe(*p));
        return out;
    }
    using ModelFamily::build;
    std::unique_ptr<Model> build(const ModelArgs& args,
                                 const BuildContext& context) const override {
        return std::make_unique<GptModel>(gpt_config_from_args(args), context,
                                          context.params_dtype);
    }
};
}  // namespace

void register_gpt(Registry& registry) {
    registry.models().add("gpt", [] { return std::make_unique<GptFamily>(); });
}

}  // namespace mt::plugins::gpt
