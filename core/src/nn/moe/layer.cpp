// The MoE feed-forward block: routing, dispatch, experts and combine, forward and backward.
#include "mt/nn/moe/layer.h"

#include <cmath>
#include <optional>
#include <tuple>

#include "mt/error.h"
#include "mt/nn/linear.h"
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

// A layer's own number of experts (Megatron-DeepSpeed's per-layer --num-experts).
TransformerConfig with_experts(const TransformerConfig& c, int64_t experts) {
    TransformerConfig out = c;
    if (experts > 0) out.moe.router.num_experts = experts;
    return out;
}

// Whether DeepSpeed's gate draws random numbers: top-1's random token selection, top-2's
// sampled second expert.
bool gate_draws(const RouterConfig& r) {
    return r.gshard.enabled && (r.topk == 1 ? r.gshard.drop_tokens : r.gshard.sample_second_expert);
}

// PR-MoE's mix of the experts' output y and the residual MLP's m by c = softmax(coefficient(x))
// (N, 2), computed in f32 (f64 for an f64 model) and rounded to the model's dtype as torch's
// in-dtype softmax is.
struct ResidualMix {
    Linear::Saved coefficient;
    Tensor c0, c1;  // (N) in the model's dtype's values (f32 for halves)
    Tensor y, m;    // (N, H): the two outputs
};

class MoeSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        DropoutDraw jitter;  // --moe-input-jitter-eps: the router input's noise
        TopKRouter::Saved router;
        std::unique_ptr<TokenDispatcher::State> dispatch;
        MoeExperts::Saved experts;
        Mlp::Saved shared;
        DropoutDraw gate_noise;  // DeepSpeed's gate: its random numbers
        Mlp::Saved residual;
        ResidualMix mix;
        Shape shape;
    };

    MoeSublayer(const std::string& prefix, const TransformerConfig& config, Backend& backend,
                std::shared_ptr<MoeTracker> tracker, int64_t layer)
        : layer_(layer),
          dtype_(config.dtype),
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
        // (DeepSpeed's MoE layer with Megatron-DeepSpeed's tensor parallelism drops the duplicate
        // tokens of the tensor ranks before its all-to-all; not mapped here yet.)
        MT_CHECK(!moe_.router.gshard.enabled ||
                     (!tp_.active() && (!moe_.tp_cp || moe_.tp_cp->size() == 1)),
                 "not supported yet: Megatron-DeepSpeed's MoE layers with tensor or context "
                 "parallelism (--tensor-model-parallel-size ",
                 tp_.size(), ")");
        if (moe_.residual_mlp) {
            residual_.emplace(join_name(prefix, "mlp.residual_mlp"), config, backend);
            coefficient_.emplace(join_name(prefix, "mlp.coefficient"), config.hidden_size, 2, true,
                                 config.dtype, ShardSpec{}, backend);
        }
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
        if (gate_draws(moe_.router))
            state->gate_noise = draw_dropout(ctx, 1.0f, N * moe_.router.num_experts);
        Routing routing =
            router_.forward(jitter(*backend_, x, state->jitter), training,
                            with_backward ? &state->router : nullptr, state->gate_noise);
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
        if (residual_) {
            Tensor m = backend_->contiguous(
                residual_->forward(x, with_backward ? &state->residual : nullptr));
            y = mix(x2, y.view({N, H}), m.view({N, H}), state->mix).view(x.shape());
        }
        if (saved) *saved = std::move(state);
        return y;
    }

    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor&) override {
        const auto& s = static_cast<const State&>(saved);
        const int64_t N = s.shape[0] * s.shape[1], H = s.shape[2];
        Tensor dy2 = backend_->contiguous(dy).view({N, H});
        Tensor d_residual, dx_coefficient;
        if (residual_) {
            auto [d_experts, d_mlp, dx_c] = mix_backward(dy2, s.mix);
            dy2 = d_experts;
            d_residual = d_mlp;
            dx_coefficient = dx_c;
        }
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
        if (residual_) {
            Tensor dm =
                backend_->contiguous(residual_->backward(d_residual.view(s.shape), s.residual));
            backend_->add(out, dm, out);
            backend_->add(out, dx_coefficient.view(s.shape), out);
        }
        return out;
    }

    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        MT_CHECK(!fused_norm, "a MoE layer's norm is not fused into its experts");
        router_.collect_parameters(out);
        experts_.collect_parameters(out);
        if (shared_) shared_->collect_parameters(out);
        // (DeepSpeed's MoE module: the gate, the experts, then PR-MoE's MLP and coefficient.)
        if (residual_) {
            residual_->collect_parameters(out);
            coefficient_->collect_parameters(out);
        }
    }
    // Dropless routing treats each token alone; with a capacity, which tokens an expert drops
    // depends on the others in the batch (DeepSpeed's gate: unless --disable-moe-token-dropping).
    bool decodes_rows() const override {
        const RouterConfig& r = moe_.router;
        return r.gshard.enabled ? !r.gshard.drop_tokens : r.capacity_factor <= 0;
    }
    void collect_buffers(std::vector<Parameter*>& out) override {
        if (Parameter* bias = router_.expert_bias()) out.push_back(bias);
    }

  private:
    // y·c0 + m·c1 with c = softmax(coefficient(x)), rows (N, H).
    Tensor mix(const Tensor& x, const Tensor& y, const Tensor& m, ResidualMix& saved) const {
        const int64_t N = x.size(0);
        Tensor z = backend_->cast_to(coefficient_->forward(x, &saved.coefficient), DType::f64)
                       .contiguous();
        std::vector<double> c0(static_cast<size_t>(N)), c1(static_cast<size_t>(N));
        auto softmax2 = [&]<class R>(R) {
            for (int64_t t = 0; t < N; ++t) {
                const R a = R(z.data<double>()[2 * t]), b = R(z.data<double>()[2 * t + 1]);
                const R top = std::max(a, b), ea = std::exp(a - top), eb = std::exp(b - top);
                c0[size_t(t)] = ea / (ea + eb);
                c1[size_t(t)] = eb / (ea + eb);
            }
        };
        if (dtype_ == DType::f64)
            softmax2(0.0);
        else
            softmax2(0.0f);
        // (Rounded to the model's dtype, kept in f32 or f64 for scale_rows: the same products.)
        auto in_dtype = [&](const std::vector<double>& c) {
            return backend_->cast_to(
                backend_->cast_to(backend_->contiguous(host_tensor(c, {N})), dtype_),
                upcast_dtype(dtype_));
        };
        saved.c0 = in_dtype(c0);
        saved.c1 = in_dtype(c1);
        saved.y = y;
        saved.m = m;
        Tensor out = backend_->empty(y.shape(), y.dtype()),
               mc = backend_->empty(m.shape(), m.dtype());
        backend_->scale_rows(y, saved.c0, out);
        backend_->scale_rows(m, saved.c1, mc);
        backend_->add(out, mc, out);
        return out;
    }
    // -> d y, d m, and the coefficient's share of dx; its weight's and bias's grads +=.
    std::tuple<Tensor, Tensor, Tensor> mix_backward(const Tensor& dy, const ResidualMix& s) {
        const int64_t N = dy.size(0);
        Tensor dyc = backend_->empty(dy.shape(), dy.dtype()),
               dmc = backend_->empty(dy.shape(), dy.dtype());
        backend_->scale_rows(dy, s.c0, dyc);
        backend_->scale_rows(dy, s.c1, dmc);
        const DType dot_dtype = upcast_dtype(dy.dtype());
        Tensor d0 = backend_->empty({N}, dot_dtype), d1 = backend_->empty({N}, dot_dtype);
        backend_->row_dots(dy, s.y, d0);
        backend_->row_dots(dy, s.m, d1);
        const Tensor h0 = backend_->cast_to(d0, DType::f64).contiguous(),
                     h1 = backend_->cast_to(d1, DType::f64).contiguous(),
                     c0 = backend_->cast_to(s.c0, DType::f64).contiguous(),
                     c1 = backend_->cast_to(s.c1, DType::f64).contiguous();
        std::vector<double> dz(size_t(2 * N));
        for (int64_t t = 0; t < N; ++t) {
            const double a = c0.data<double>()[t], b = c1.data<double>()[t];
            const double da = h0.data<double>()[t], db = h1.data<double>()[t];
            const double dot = a * da + b * db;
            dz[size_t(2 * t)] = a * (da - dot);
            dz[size_t(2 * t + 1)] = b * (db - dot);
        }
        Tensor dzt = backend_->cast_to(backend_->contiguous(host_tensor(dz, {N, 2})), dtype_);
        Tensor dx = coefficient_->backward(dzt, s.coefficient);
        return {dyc, dmc, backend_->contiguous(dx)};
    }

    // The routing's auxiliary losses, each over its coefficient (Megatron's tracker), summed
    // over the sequence parts for the load-balancing loss; DeepSpeed's gate reports its loss
    // with the coefficient, as Megatron-DeepSpeed's "moe loss".
    void report(const Routing& r) const {
        if (!tracker_) return;
        const RouterConfig& c = moe_.router;
        if (c.gshard.enabled) {
            if (reports_load_balancing(c)) tracker_->add(kDeepSpeedMoeLoss, layer_, r.aux_loss);
            return;
        }
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
    DType dtype_;
    MoeConfig moe_;
    TopKRouter router_;
    std::unique_ptr<TokenDispatcher> dispatcher_;
    MoeExperts experts_;
    std::optional<Mlp> shared_;
    std::optional<Mlp> residual_;        // PR-MoE's MLP
    std::optional<Linear> coefficient_;  // and its mixing coefficient
    std::shared_ptr<MoeTracker> tracker_;
    std::optional<size_t> expert_bias_slot_;  // the router's in tracker_
    DType probs_dtype_;
    TensorParallel tp_;
    Backend* backend_;
};

}  // namespace

SublayerSpec moe_sublayer(std::shared_ptr<MoeTracker> tracker, int64_t layer, int64_t experts) {
    return SublayerSpec{
        [tracker, layer, experts](const std::string& prefix, const TransformerConfig& config,
                                  Backend& backend) {
            return std::unique_ptr<Sublayer>(std::make_unique<MoeSublayer>(
                prefix, with_experts(config, experts), backend, tracker, layer));
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
        return LayerSpec{{attention_sublayer(multi_latent),
                          moe_sublayer(tracker, layer, pattern.experts_of(layer, 0))}};
    };
}

}  // namespace mt::nn
