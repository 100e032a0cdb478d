// TopKRouter: the gating GEMM on the backend, the routing on the host in Megatron's token order.
#include "mt/nn/moe/router.h"

#include "mt/error.h"

namespace mt::nn {

namespace {

// (B, T, E) values in (b, t) order <-> Megatron's (T, B, E) sequence-major order.
std::vector<double> to_sequence_major(const double* v, int64_t B, int64_t T, int64_t E) {
    std::vector<double> out(size_t(B * T * E));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            std::copy_n(v + (b * T + t) * E, E, out.begin() + (t * B + b) * E);
    return out;
}
template <class V>
std::vector<V> to_batch_major(const std::vector<V>& v, int64_t B, int64_t T, int64_t E) {
    std::vector<V> out(v.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            std::copy_n(v.begin() + (t * B + b) * E, E, out.begin() + (b * T + t) * E);
    return out;
}

// n numbers in [0, 1) from the draw's counters, mapped as the input jitter maps them (the
// backend's uniform_scale of ones).
std::vector<double> uniforms(Backend& backend, const DropoutDraw& draw, int64_t n) {
    if (!draw.applied) return {};
    Tensor ones = backend.empty({n}, DType::f32), u = backend.empty({n}, DType::f32);
    backend.fill(ones, 1.0);
    backend.uniform_scale(ones, 0.0f, 1.0f, draw.seed, draw.offset, u);
    const Tensor host = backend.cast_to(u, DType::f64).contiguous();
    return std::vector<double>(host.data<double>(), host.data<double>() + n);
}

}  // namespace

TopKRouter::TopKRouter(const std::string& prefix, const TransformerConfig& config, Backend& backend)
    : config_(config.moe.router),
      logits_dtype_(config.dtype == DType::f64 || config.moe.router.logits_in_f64 ? DType::f64
                    : config.moe.router.logits_in_f32                             ? DType::f32
                                                                                  : config.dtype),
      weight_(make_parameter(backend, join_name(prefix, "router.weight"),
                             {config.moe.router.num_experts, config.hidden_size}, config.dtype,
                             ShardSpec{}, true, config.tp)),
      sequence_partition_(config.moe.tp_cp && config.moe.tp_cp->size() > 1 ? config.moe.tp_cp
                                                                           : nullptr),
      backend_(&backend) {
    // Each tensor-parallel rank routes its sequence shard: its grad is a partial sum (Megatron
    // marks the weight sequence_parallel).
    weight_.grad_partial_over_tp = config.tp.sequence_split();
    // (DeepSpeed's gate has no bias.)
    if (config.add_bias_linear && !config_.gshard.enabled) {
        // Megatron draws it as it draws the weight (init_method: N(0, init-method-std)).
        bias_ = make_parameter(backend, join_name(prefix, "router.bias"),
                               {config.moe.router.num_experts}, config.dtype, ShardSpec{}, false,
                               config.tp);
        bias_.init.kind = ParameterInit::Kind::normal;
        bias_.grad_partial_over_tp = weight_.grad_partial_over_tp;
    }
    if (config_.expert_bias) {
        // Megatron keeps it in float32 whatever the model's dtype (_maintain_float32_expert_bias).
        expert_bias_ =
            make_parameter(backend, join_name(prefix, "router.expert_bias"), {config_.num_experts},
                           DType::f32, ShardSpec{}, false, config.tp);
        expert_bias_.grad = Tensor();  // a buffer: never trained
    }
}

Routing TopKRouter::forward(const Tensor& x, bool training, Saved* saved,
                            const DropoutDraw& noise) const {
    MT_CHECK(x.dim() == 3, "TopKRouter: x must be (B, T, H), got ", x.describe());
    const int64_t B = x.size(0), T = x.size(1), H = x.size(2), E = config_.num_experts;
    Tensor x2 = backend_->cast_to(backend_->contiguous(x).view({B * T, H}), logits_dtype_);
    Tensor w = backend_->cast_to(weight_.value, logits_dtype_);
    Tensor logits = backend_->empty({B * T, E}, logits_dtype_);
    backend_->gemm(Transpose::no, Transpose::yes, 1.0f, x2, w, 0.0f, logits);
    if (bias_.value.defined())
        backend_->add_bias(backend_->cast_to(bias_.value, logits_dtype_), logits);
    Tensor host = backend_->cast_to(logits, DType::f64).contiguous();
    std::vector<double> l = to_sequence_major(host.data<double>(), B, T, E);
    RoutingShape shape{T, B, sequence_partition_};
    std::vector<double> bias;
    if (config_.expert_bias) {
        const Tensor b = backend_->cast_to(expert_bias_.value, DType::f64).contiguous();
        bias.assign(b.data<double>(), b.data<double>() + E);
    }
    Routing r = route(config_, l, shape, bias, training, logits_dtype_ == DType::f64,
                      uniforms(*backend_, noise, B * T * E));
    // The caller's view in (b, t) order: what dispatch and the loss report read (the rest stays
    // with the backward's copy).
    Routing out;
    out.tokens = r.tokens;
    out.experts = r.experts;
    out.probs = to_batch_major(r.probs, B, T, E);
    out.map = to_batch_major(r.map, B, T, E);
    out.tokens_per_expert = r.tokens_per_expert;
    out.aux_loss = r.aux_loss;
    out.z_loss = r.z_loss;
    if (saved) *saved = Saved{x2, std::move(l), std::move(r), B, T};
    return out;
}

Tensor TopKRouter::backward(const std::vector<double>& dprobs, const Saved& s, double aux_scale) {
    const int64_t B = s.batch, T = s.seq, E = config_.num_experts;
    std::vector<double> dl =
        route_backward(config_, s.logits, s.routing, to_sequence_major(dprobs.data(), B, T, E),
                       aux_scale, logits_dtype_ == DType::f64);
    Tensor dlogits = backend_->cast_to(
        backend_->contiguous(host_tensor(to_batch_major(dl, B, T, E), {B * T, E})), logits_dtype_);
    Tensor w = backend_->cast_to(weight_.value, logits_dtype_);
    Tensor dx = backend_->empty(s.x.shape(), logits_dtype_);
    backend_->gemm(Transpose::no, Transpose::no, 1.0f, dlogits, w, 0.0f, dx);
    backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dlogits, s.x, 1.0f, weight_.grad);
    if (bias_.value.defined()) backend_->add_column_sums(dlogits, bias_.grad);
    return backend_->cast_to(dx, weight_.value.dtype()).view({B, T, s.x.size(1)});
}

}  // namespace mt::nn
