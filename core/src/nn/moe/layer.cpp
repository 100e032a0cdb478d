// The MoE feed-forward block: routing, dispatch, experts and combine, forward and backward.
#include "mt/nn/moe/layer.h"

#include <optional>

#include "mt/error.h"
#include "mt/nn/mlp.h"
#include "mt/nn/moe/dispatcher.h"
#include "mt/nn/moe/experts.h"
#include "mt/nn/moe/router.h"
#include "mt/parallel/collectives.h"

namespace mt::nn {

namespace {

// The shared experts: the dense MLP at --moe-shared-expert-intermediate-size.
TransformerConfig shared_expert_config(const TransformerConfig& c) {
    TransformerConfig s = c;
    s.ffn_hidden_size = c.moe.shared_expert_ffn_size;
    return s;
}

class MoeSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        DropoutDraw jitter;  // --moe-input-jitter-eps: the router input's noise
        TopKRouter::Saved router;
        std::unique_ptr<TokenDispatcher::State> dispatch;
        MoeExperts::Saved experts;
        Mlp::Saved shared;
        Shape shape;
    };

    MoeSublayer(const std::string& prefix, const TransformerConfig& config, Backend& backend,
                std::shared_ptr<MoeTracker> tracker, int64_t layer)
        : layer_(layer),
          moe_(config.moe),
          router_(join_name(prefix, "mlp"), config, backend),
          dispatcher_(make_token_dispatcher(config.moe, backend)),
          experts_(join_name(prefix, "mlp"), config, backend),
          tracker_(std::move(tracker)),
          probs_dtype_(upcast_dtype(config.dtype)),
          tp_(config.tp),
          backend_(&backend) {
        if (moe_.shared_expert_ffn_size > 0)
            shared_.emplace(join_name(prefix, "mlp.shared_experts"), shared_expert_config(config),
                            backend);
        if (Parameter* bias = router_.expert_bias()) {
            MT_CHECK(tracker_, "a MoE layer with an expert bias needs the model's MoeTracker");
            expert_bias_slot_ = tracker_->add_expert_bias(*bias);
        }
    }

    Tensor forward(const Tensor& x, DropoutContext& ctx, std::unique_ptr<ModuleState>* saved,
                   bool /*keep_input: the router and dispatch keep what they need*/,
                   const SublayerContext& /*in: reads no mask or state*/) const override {
        MT_CHECK(x.dim() == 3, "MoE layer: x must be (B, T, H), got ", x.describe());
        auto state = std::make_unique<State>();
        // A training pass routes as training does (sinkhorn balances), also the first pass of a
        // full recompute, which keeps nothing (as Megatron's module.training without grad);
        // only a pass with a backward reports and counts (Megatron's torch.is_grad_enabled).
        const bool training = ctx.training, with_backward = saved != nullptr;
        // Megatron's MoELayer raises this too: without sequence parallelism every tensor rank
        // routes the same tokens, which the router's losses would count as distinct parts.
        MT_CHECK(!with_backward || !tp_.active() || tp_.sequence_parallel,
                 "MoE layers with tensor parallelism need --sequence-parallel in training "
                 "(Megatron-core's MoELayer refuses it too)");
        state->shape = x.shape();
        const int64_t N = x.size(0) * x.size(1), H = x.size(2);
        // Each sequence shard draws its part of the whole site's counters, as dropout does.
        state->jitter = draw_dropout(ctx, float(moe_.router.input_jitter_eps), x.numel(),
                                     tp_.sequence_shard(), tp_.sequence_shards());
        Routing routing = router_.forward(jitter(*backend_, x, state->jitter), training,
                                          with_backward ? &state->router : nullptr);
        if (with_backward) {
            report(routing);
            if (expert_bias_slot_) tracker_->count_routed(*expert_bias_slot_, routing.map);
        }
        Tensor x2 = backend_->contiguous(x).view({N, H});
        auto dispatched = dispatcher_->dispatch(x2, routing, probs_dtype_, state->dispatch);
        Tensor y_rows = experts_.forward(dispatched.x, state->dispatch->rows, dispatched.probs,
                                         with_backward ? &state->experts : nullptr);
        Tensor y = dispatcher_->combine(y_rows, *state->dispatch).view(x.shape());
        if (shared_) {
            Tensor s = shared_->forward(x, with_backward ? &state->shared : nullptr);
            backend_->add(y, backend_->contiguous(s), y);
        }
        if (saved) *saved = std::move(state);
        return y;
    }

    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor&) override {
        const auto& s = static_cast<const State&>(saved);
        const int64_t N = s.shape[0] * s.shape[1], H = s.shape[2];
        Tensor dy2 = backend_->contiguous(dy).view({N, H});
        Tensor d_rows = dispatcher_->combine_backward(dy2, *s.dispatch);
        MoeExperts::Grads g = experts_.backward(d_rows, s.experts);
        auto [dx, dprobs] = dispatcher_->dispatch_backward(g.dx, g.dprobs, *s.dispatch);
        // Megatron scales the auxiliary losses by the tokens with --calculate-per-token-loss.
        const double aux_scale =
            (tracker_ ? tracker_->grad_scale() : 1.0) * (moe_.per_token_loss ? double(N) : 1.0);
        Tensor dx_router =
            jitter(*backend_, router_.backward(dprobs, s.router, aux_scale), s.jitter);
        Tensor out = dx.view(s.shape);
        backend_->add(out, dx_router, out);
        if (shared_) backend_->add(out, backend_->contiguous(shared_->backward(dy, s.shared)), out);
        return out;
    }

    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        MT_CHECK(!fused_norm, "a MoE layer's norm is not fused into its experts");
        router_.collect_parameters(out);
        experts_.collect_parameters(out);
        if (shared_) shared_->collect_parameters(out);
    }
    // Dropless routing treats each token alone; with a capacity, which tokens an expert drops
    // depends on the others in the batch.
    bool decodes_rows() const override { return moe_.router.capacity_factor <= 0; }
    void collect_buffers(std::vector<Parameter*>& out) override {
        if (Parameter* bias = router_.expert_bias()) out.push_back(bias);
    }

  private:
    // The routing's auxiliary losses, each over its coefficient (Megatron's tracker), summed
    // over the sequence parts for the load-balancing loss.
    void report(const Routing& r) const {
        if (!tracker_) return;
        const RouterConfig& c = moe_.router;
        const bool balancing = reports_load_balancing(c), z = reports_z_loss(c);
        if (!balancing && !z) return;
        // Under sequence or context parallelism each rank routed part of the tokens: its
        // balancing loss is its part of the sum (Megatron reduces it over tp_cp); its z-loss a
        // mean over its part, averaged here so every layout reports the whole mean (Megatron
        // logs the last rank's).
        const int parts = moe_.tp_cp ? moe_.tp_cp->size() : 1;
        std::vector<double> v{balancing ? r.aux_loss / c.aux_loss_coeff : 0.0,
                              z ? r.z_loss / (c.z_loss_coeff / parts) / parts : 0.0};
        if (parts > 1) parallel::all_reduce_values(*moe_.tp_cp, v, ReduceOp::sum);
        if (balancing) tracker_->add("load_balancing_loss", layer_, v[0]);
        if (z) tracker_->add("z_loss", layer_, v[1]);
    }

    int64_t layer_;  // in the whole model, for the tracker
    MoeConfig moe_;
    TopKRouter router_;
    std::unique_ptr<TokenDispatcher> dispatcher_;
    MoeExperts experts_;
    std::optional<Mlp> shared_;
    std::shared_ptr<MoeTracker> tracker_;
    std::optional<size_t> expert_bias_slot_;  // the router's in tracker_
    DType probs_dtype_;
    TensorParallel tp_;
    Backend* backend_;
};

}  // namespace

SublayerSpec moe_sublayer(std::shared_ptr<MoeTracker> tracker, int64_t layer) {
    return SublayerSpec{[tracker, layer](const std::string& prefix, const TransformerConfig& config,
                                         Backend& backend) {
                            return std::unique_ptr<Sublayer>(std::make_unique<MoeSublayer>(
                                prefix, config, backend, tracker, layer));
                        },
                        // (--recompute-modules mlp leaves MoE layers alone, as Megatron's
                        // TransformerLayer recomputes only dense MLPs; moe_act is theirs.)
                        "", "pre_mlp_layernorm", "", false};
}

std::function<LayerSpec(int64_t layer)> moe_layer_specs(MoeLayerPattern pattern,
                                                        std::shared_ptr<MoeTracker> tracker,
                                                        bool multi_latent) {
    const LayerSpec dense = dense_layer_spec(multi_latent);
    return [pattern = std::move(pattern), dense, tracker = std::move(tracker),
            multi_latent](int64_t layer) {
        MT_CHECK(layer >= 0 && layer < int64_t(pattern.moe.size()), "layer ", layer,
                 " is outside the --moe-layer-freq pattern of ", pattern.moe.size(), " layers");
        if (!pattern.moe[size_t(layer)]) return dense;
        return LayerSpec{{attention_sublayer(multi_latent), moe_sublayer(tracker, layer)}};
    };
}

}  // namespace mt::nn
