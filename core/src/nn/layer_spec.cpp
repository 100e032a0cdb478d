// The dense layer spec: SelfAttention and Mlp behind the layer's module interfaces.
#include "mt/nn/layer_spec.h"

#include "mt/nn/mlp.h"

namespace mt::nn {

namespace {

class SelfAttentionMixer final : public TokenMixer {
  public:
    struct State final : ModuleState {
        SelfAttention::Saved saved;
    };

    SelfAttentionMixer(const std::string& prefix, const TransformerConfig& config, Backend& backend)
        : attention_(join_name(prefix, "self_attention"), config, backend) {}

    Tensor forward(const Tensor& x, DropoutContext& ctx, std::unique_ptr<ModuleState>* saved,
                   bool keep_input, const AttentionMask& mask, const KvSlot& cache) const override {
        if (!saved) return attention_.forward(x, ctx, nullptr, mask, cache);
        auto state = std::make_unique<State>();
        Tensor y = attention_.forward(x, ctx, &state->saved, mask, cache);
        if (!keep_input) state->saved.qkv = {};
        *saved = std::move(state);
        return y;
    }
    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) override {
        const auto& state = static_cast<const State&>(saved);
        if (!input.defined()) return attention_.backward(dy, state.saved);
        SelfAttention::Saved rebuilt = state.saved;
        rebuilt.qkv = attention_.linear_qkv().saved_for(input);
        return attention_.backward(dy, rebuilt);
    }
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        // Megatron-core registers linear_proj before linear_qkv; Transformer Engine's
        // LayerNormLinear registers its norm before its own weight and bias.
        attention_.linear_proj().collect_parameters(out);
        if (fused_norm) fused_norm->collect_parameters(out);
        attention_.linear_qkv().collect_parameters(out);
        attention_.collect_qk_norm_parameters(out);
    }

  private:
    SelfAttention attention_;
};

class DenseFeedForward final : public FeedForward {
  public:
    struct State final : ModuleState {
        Mlp::Saved saved;
    };

    DenseFeedForward(const std::string& prefix, const TransformerConfig& config, Backend& backend)
        : mlp_(join_name(prefix, "mlp"), config, backend) {}

    Tensor forward(const Tensor& x, DropoutContext& /*ctx: no noise of its own*/,
                   std::unique_ptr<ModuleState>* saved, bool keep_input) const override {
        if (!saved) return mlp_.forward(x, nullptr);
        auto state = std::make_unique<State>();
        Tensor y = mlp_.forward(x, &state->saved);
        if (!keep_input) state->saved.fc1 = {};
        *saved = std::move(state);
        return y;
    }
    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) override {
        const auto& state = static_cast<const State&>(saved);
        if (!input.defined()) return mlp_.backward(dy, state.saved);
        Mlp::Saved rebuilt = state.saved;
        rebuilt.fc1 = mlp_.fc1().saved_for(input);
        return mlp_.backward(dy, rebuilt);
    }
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        if (fused_norm) fused_norm->collect_parameters(out);
        mlp_.fc1().collect_parameters(out);
        mlp_.fc2().collect_parameters(out);
    }

  private:
    Mlp mlp_;
};

}  // namespace

LayerSpec dense_layer_spec() {
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<TokenMixer>(
                    std::make_unique<SelfAttentionMixer>(prefix, config, backend));
            },
            [](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<FeedForward>(
                    std::make_unique<DenseFeedForward>(prefix, config, backend));
            }};
}

LayerSpecs dense_layer_specs() {
    return [](int64_t) { return dense_layer_spec(); };
}

}  // namespace mt::nn
