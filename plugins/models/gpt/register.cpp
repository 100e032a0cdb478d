#include "register.h"

#include <memory>
#include <mutex>

#include "gpt_data.h"
#include "gpt_model.h"
#include "hybrid_args.h"
#include "mt/log.h"
#include "mt/nn/hybrid_layer_pattern.h"
#include "mt/parallel/parallel_state.h"

namespace mt::plugins::gpt {

namespace {

// Megatron's GPT (pretrain_gpt.py) and, with `hybrid`, its Mamba hybrid models
// (pretrain_mamba.py; core_v0.19's pretrain_hybrid.py): the same embedding, output layer, data
// and loss around a stack of Mamba, attention-only and MLP-only layers.
class GptFamily final : public ModelFamily {
  public:
    GptFamily(std::string_view name, bool hybrid) : name_(name), hybrid_(hybrid) {}
    std::string_view name() const override { return name_; }
    std::vector<FlagInfo> flags() const override {
        std::vector<FlagInfo> flags = nn::transformer_flags();
        if (hybrid_)
            for (FlagInfo& f : hybrid_flags()) flags.push_back(std::move(f));
        return flags;
    }
    std::vector<FlagInfo> data_flags() const override { return gpt_data_flags(!hybrid_); }
    std::string default_tokenizer_type() const override { return "GPT2BPETokenizer"; }
    std::array<std::shared_ptr<data::SampleDataset>, 3> datasets(
        const data::DatasetRequest& request) const override {
        return gpt_datasets(request);
    }
    ModelArgs resolved_args(const ModelArgs& given) const override {
        const ModelArgs args = with_pattern_layers(given);
        ModelArgs out = nn::resolved_transformer_args(args, nn::read_transformer_args(args));
        // The spec the layers are built from, recorded in checkpoints (a MambaStack keys its
        // layers one by one in torch_dist).
        if (hybrid_) out.emplace("spec", mamba_stack_spec(args));
        return out;
    }
    using ModelFamily::build;
    std::unique_ptr<Model> build(const ModelArgs& given,
                                 const BuildContext& context) const override {
        const ModelArgs args = with_pattern_layers(given);
        const nn::TransformerArgs config = nn::read_transformer_args(args);
        std::optional<HybridArgs> hybrid;
        if (hybrid_) {
            hybrid = read_hybrid_args(args, config.num_layers);
            // Megatron logs the allocation on rank 0 (log_single_rank) when it builds the model:
            // once, and not for the models built only to list parameters (on the one-process
            // context).
            static std::once_flag logged;
            if (&context.parallel != &single_process_context().parallel &&
                context.parallel.world().rank() == 0)
                std::call_once(logged, [&] {
                    for (const std::string& line : hybrid->allocation) log::info(line);
                });
        }
        return std::make_unique<GptModel>(config, context, context.params_dtype, std::move(hybrid));
    }

  private:
    // core_v0.19's --hybrid-layer-pattern gives the layer count (its validate_args takes it over
    // --num-layers).
    ModelArgs with_pattern_layers(ModelArgs args) const {
        if (auto p = args.find("hybrid-layer-pattern"); hybrid_ && p != args.end())
            args["num-layers"] = std::to_string(nn::hybrid_pattern_layers(p->second));
        return args;
    }

    std::string_view name_;
    bool hybrid_;
};

}  // namespace

void register_gpt(Registry& registry) {
    registry.models().add("gpt", [] { return std::make_unique<GptFamily>("gpt", false); });
    for (std::string_view name : {"mamba", "hybrid"})
        registry.models().add(std::string(name),
                              [name] { return std::make_unique<GptFamily>(name, true); });
}

}  // namespace mt::plugins::gpt
