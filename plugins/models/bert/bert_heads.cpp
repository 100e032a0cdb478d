#include "bert_heads.h"

#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::plugins::bert {

namespace {

// Megatron's get_linear_layer: a linear with a bias, whole on every tensor-parallel rank (the
// group still knows it: a replicated parameter counts once in the gradient norm).
nn::Linear dense(const std::string& name, int64_t in, int64_t out,
                 const nn::TransformerConfig& config, Backend& backend) {
    return nn::Linear(name, in, out, true, config.dtype, ShardSpec{}, backend, config.tp);
}

}  // namespace

Pooler::Pooler(const nn::TransformerConfig& config, Backend& backend)
    : dense_(dense("pooler.dense", config.hidden_size, config.hidden_size, config, backend)),
      backend_(&backend),
      tp_(config.tp) {}

Tensor Pooler::forward(const Tensor& hidden, Saved* saved) const {
    MT_CHECK(hidden.dim() == 3, "Pooler: hidden must be (B, T, H), got ", hidden.describe());
    // Sequence parallel: the shards gathered; every rank then pools the same [CLS] state
    // (Megatron's gather_from_sequence_parallel_region, whose gradient is split, not summed).
    const Tensor whole = nn::enter_column_parallel(tp_, hidden);
    const Tensor first = backend_->contiguous(whole.select(1, 0));
    Saved local;
    Saved& s = saved ? *saved : local;
    s.pre_tanh = dense_.forward(first, saved ? &s.dense : nullptr);
    s.hidden_shape = whole.shape();
    Tensor y = backend_->empty(s.pre_tanh.shape(), s.pre_tanh.dtype());
    backend_->unary_forward(ops::UnaryOp::tanh, s.pre_tanh, y);
    return y;
}

Tensor Pooler::backward(const Tensor& dpooled, const Saved& saved) {
    Tensor d = backend_->empty(saved.pre_tanh.shape(), saved.pre_tanh.dtype());
    backend_->unary_backward(ops::UnaryOp::tanh, saved.pre_tanh, backend_->contiguous(dpooled), d);
    const Tensor dfirst = dense_.backward(d, saved.dense);
    Tensor dh = backend_->zeros(saved.hidden_shape, dfirst.dtype());
    Tensor at_first = dh.select(1, 0);
    backend_->copy(dfirst, at_first);
    return nn::scatter_to_sequence_parallel(tp_, dh);
}

LmHead::LmHead(const nn::TransformerConfig& config, Backend& backend)
    : dense_(dense("lm_head.dense", config.hidden_size, config.hidden_size, config, backend)),
      norm_(config.normalization, "lm_head.layer_norm.weight", "lm_head.layer_norm.bias",
            config.hidden_size, config.norm, config.dtype, backend, config.tp),
      backend_(&backend) {
    // Sequence parallel: the dense layer sees this rank's part of the sequence, so its grads
    // are partial sums over the tensor-parallel group (Megatron's sequence_parallel attribute).
    dense_.weight().grad_partial_over_tp = config.tp.sequence_split();
    dense_.bias()->grad_partial_over_tp = config.tp.sequence_split();
}

Tensor LmHead::forward(const Tensor& hidden, Saved* saved) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    s.pre_gelu = dense_.forward(hidden, saved ? &s.dense : nullptr);
    // BertLMHead's torch.nn.functional.gelu: the erf form, whatever the MLP uses.
    Tensor y = backend_->empty(s.pre_gelu.shape(), s.pre_gelu.dtype());
    backend_->unary_forward(ops::UnaryOp::gelu_erf, s.pre_gelu, y);
    return norm_.forward(y, saved ? &s.norm : nullptr);
}

Tensor LmHead::backward(const Tensor& dy, const Saved& saved) {
    Tensor d = norm_.backward(dy, saved.norm);
    Tensor dpre = backend_->empty(saved.pre_gelu.shape(), saved.pre_gelu.dtype());
    backend_->unary_backward(ops::UnaryOp::gelu_erf, saved.pre_gelu, backend_->contiguous(d), dpre);
    return dense_.backward(dpre, saved.dense);
}

void LmHead::collect_parameters(std::vector<nn::Parameter*>& out) {
    dense_.collect_parameters(out);
    norm_.collect_parameters(out);
}

PooledHead::PooledHead(const std::string& name, int64_t classes, float dropout,
                       const nn::TransformerConfig& config, Backend& backend)
    : linear_(dense(name, config.hidden_size, classes, config, backend)),
      dropout_(dropout),
      backend_(&backend) {}

Tensor PooledHead::logits(const Tensor& pooled, nn::DropoutContext& ctx, Saved* saved) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    s.dropout = nn::draw_dropout(ctx, dropout_, pooled.numel());
    const Tensor x = nn::dropout_forward(*backend_, pooled, s.dropout);
    const Tensor logits = linear_.forward(x, saved ? &s.linear : nullptr);
    s.out_shape = logits.shape();
    // Megatron's heads score in f32 (the cross-entropy upcasts half logits).
    return backend_->cast_to(logits, nn::upcast_dtype(logits.dtype()));
}

Tensor PooledHead::losses(const Tensor& logits, const Tensor& targets, Saved& saved) const {
    MT_CHECK(logits.dim() == 2 && targets.shape() == Shape({logits.size(0)}),
             "the head's targets must be (", logits.size(0), "), got ", targets.describe());
    saved.logits = logits;
    saved.targets = backend_->contiguous(targets);
    Tensor losses = backend_->empty({logits.size(0)}, logits.dtype());
    saved.lse = backend_->empty({logits.size(0)}, logits.dtype());
    backend_->cross_entropy_forward(logits, saved.targets, losses, saved.lse);
    return losses;
}

Tensor PooledHead::backward(const Tensor& dlosses, const Saved& saved) {
    Tensor dlogits = backend_->empty(saved.logits.shape(), saved.logits.dtype());
    backend_->cross_entropy_backward(saved.logits, saved.targets, saved.lse,
                                     backend_->contiguous(dlosses), dlogits);
    const Tensor dx = linear_.backward(
        backend_->cast_to(dlogits, linear_.weight().value.dtype()).view(saved.out_shape),
        saved.linear);
    return nn::dropout_backward(*backend_, dx, saved.dropout);
}

}  // namespace mt::plugins::bert
