// The dense layer spec: SelfAttention and Mlp behind the sublayer interface.
#include "mt/nn/layer_spec.h"

#include "mt/nn/attention.h"
#include "mt/nn/mla_attention.h"
#include "mt/nn/mlp.h"

namespace mt::nn {

Tensor each_row(
    const Tensor& x, const SublayerContext& in, Backend& backend,
    const std::function<Tensor(const Tensor& row, SublayerState* state, int64_t past)>& one) {
    const int64_t B = x.size(0);
    MT_CHECK(int64_t(in.rows.size()) == B && int64_t(in.row_pasts.size()) == B,
             "continuous batching: ", in.rows.size(), " row states for ", B, " rows");
    Tensor out;
    for (int64_t b = 0; b < B; ++b) {
        const Tensor y = one(backend.contiguous(x.slice(0, b, b + 1)), in.rows[size_t(b)],
                             in.row_pasts[size_t(b)]);
        if (!out.defined()) out = backend.empty({B, y.size(1), y.size(2)}, y.dtype());
        Tensor to = out.slice(0, b, b + 1);
        backend.copy(y, to);
    }
    return out;
}

namespace {

class SelfAttentionSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        SelfAttention::Saved saved;
    };

    SelfAttentionSublayer(const std::string& prefix, const TransformerConfig& config,
                          Backend& backend)
        : attention_(join_name(prefix, "self_attention"), config, backend) {}

    Tensor forward(const Tensor& x, DropoutContext& ctx, std::unique_ptr<ModuleState>* saved,
                   bool keep_input, const SublayerContext& in) const override {
        std::vector<KvState*> rows;  // continuous batching's (SublayerContext::rows)
        for (SublayerState* row : in.rows) rows.push_back(static_cast<KvState*>(row));
        const KvSlot cache{static_cast<KvState*>(in.state), in.past, rows, in.row_pasts};
        if (!saved) return attention_.forward(x, ctx, nullptr, in.mask, cache);
        auto state = std::make_unique<State>();
        Tensor y = attention_.forward(x, ctx, &state->saved, in.mask, cache);
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
        // Megatron-core registers core_attention (its softmax offsets), then linear_proj before
        // linear_qkv; Transformer Engine's LayerNormLinear registers its norm before its own
        // weight and bias.
        attention_.collect_softmax_offset(out);
        attention_.linear_proj().collect_parameters(out);
        if (fused_norm) fused_norm->collect_parameters(out);
        attention_.linear_qkv().collect_parameters(out);
        attention_.collect_qk_norm_parameters(out);
    }
    std::unique_ptr<SublayerState> make_state(int64_t batch, int64_t capacity) const override {
        return attention_.make_state(batch, capacity);
    }
    bool decodes_rows() const override { return true; }

  private:
    SelfAttention attention_;
};

class MlaSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        MultiLatentAttention::Saved saved;
    };

    MlaSublayer(const std::string& prefix, const TransformerConfig& config, Backend& backend)
        : attention_(join_name(prefix, "self_attention"), config, backend), backend_(backend) {}

    Tensor forward(const Tensor& x, DropoutContext& ctx, std::unique_ptr<ModuleState>* saved,
                   bool keep_input, const SublayerContext& in) const override {
        if (!in.rows.empty())
            return each_row(x, in, backend_,
                            [&](const Tensor& row, SublayerState* s, int64_t past) {
                                return attention_.forward(row, ctx, nullptr, in.mask,
                                                          static_cast<MlaState*>(s), past);
                            });
        auto* cache = static_cast<MlaState*>(in.state);
        if (!saved) return attention_.forward(x, ctx, nullptr, in.mask, cache, in.past);
        auto state = std::make_unique<State>();
        Tensor y = attention_.forward(x, ctx, &state->saved, in.mask, cache, in.past);
        if (!keep_input) MultiLatentAttention::drop_input(state->saved);
        *saved = std::move(state);
        return y;
    }
    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) override {
        const auto& state = static_cast<const State&>(saved);
        if (!input.defined()) return attention_.backward(dy, state.saved);
        MultiLatentAttention::Saved rebuilt = state.saved;
        attention_.restore_input(rebuilt, input);
        return attention_.backward(dy, rebuilt);
    }
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        MT_CHECK(!fused_norm, "multi-latent attention keeps its input norm a module of its own");
        attention_.collect_parameters(out);
    }
    std::unique_ptr<SublayerState> make_state(int64_t batch, int64_t capacity) const override {
        return attention_.make_state(batch, capacity);
    }
    bool decodes_rows() const override { return true; }  // one row at a time

  private:
    MultiLatentAttention attention_;
    Backend& backend_;
};

class DenseMlpSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        Mlp::Saved saved;
    };

    DenseMlpSublayer(const std::string& prefix, const TransformerConfig& config, Backend& backend)
        : mlp_(join_name(prefix, "mlp"), config, backend) {}

    Tensor forward(const Tensor& x, DropoutContext& /*ctx: no noise of its own*/,
                   std::unique_ptr<ModuleState>* saved, bool keep_input,
                   const SublayerContext& /*in: reads no mask or state*/) const override {
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
    bool decodes_rows() const override { return true; }  // each row on its own

  private:
    Mlp mlp_;
};

}  // namespace

SublayerSpec self_attention_sublayer() {
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<Sublayer>(
                    std::make_unique<SelfAttentionSublayer>(prefix, config, backend));
            },
            "self_attention.linear_qkv", "input_layernorm",
            "self_attention.linear_proj.post_layernorm", false};
}

SublayerSpec attention_sublayer(bool multi_latent) {
    if (!multi_latent) return self_attention_sublayer();
    // Transformer Engine's MLA spec keeps input_layernorm a TENorm of its own.
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<Sublayer>(
                    std::make_unique<MlaSublayer>(prefix, config, backend));
            },
            "", "input_layernorm", "", false};
}

SublayerSpec dense_mlp_sublayer() {
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<Sublayer>(
                    std::make_unique<DenseMlpSublayer>(prefix, config, backend));
            },
            "mlp.linear_fc1", "pre_mlp_layernorm", "mlp.linear_fc2.post_layernorm", true};
}

LayerSpec dense_layer_spec(bool multi_latent) {
    return {{attention_sublayer(multi_latent), dense_mlp_sublayer()}};
}

LayerSpecs dense_layer_specs(bool multi_latent) {
    return [spec = dense_layer_spec(multi_latent)](int64_t) { return spec; };
}

}  // namespace mt::nn
