// TransformerLayer forward/backward: two pre-norm residual branches; the residual adds are
// explicit, and their gradient (dy itself) is added to each branch's input gradient.
#include "mt/nn/transformer_layer.h"

namespace mt::nn {

namespace {

// te_linear: the linear the norm is fused into with Transformer Engine; local: the module name
// of the local spec.
Norm make_norm(const std::string& prefix, const char* te_linear, const char* local,
               const TransformerConfig& config, Backend& backend) {
    const bool te = config.norm_naming == NormNaming::transformer_engine;
    const std::string base = join_name(prefix, te ? te_linear : local);
    return Norm(config.normalization, join_name(base, te ? "layer_norm_weight" : "weight"),
                join_name(base, te ? "layer_norm_bias" : "bias"), config.hidden_size, config.norm,
                config.dtype, backend, config.tp);
}

}  // namespace

TransformerLayer::TransformerLayer(const std::string& prefix, const TransformerConfig& config,
                                   Backend& backend)
    : hidden_dropout_(config.hidden_dropout),
      input_norm_(
          make_norm(prefix, "self_attention.linear_qkv", "input_layernorm", config, backend)),
      attention_(join_name(prefix, "self_attention"), config, backend),
      pre_mlp_norm_(make_norm(prefix, "mlp.linear_fc1", "pre_mlp_layernorm", config, backend)),
      mlp_(join_name(prefix, "mlp"), config, backend),
      backend_(&backend),
      tp_(config.tp),
      recompute_mlp_(config.recompute_mlp),
      recompute_norms_(config.recompute_norms) {}

Tensor TransformerLayer::sum(const Tensor& a, const Tensor& b) const {
    Tensor y = backend_->empty(a.shape(), a.dtype());
    backend_->add(backend_->contiguous(a), backend_->contiguous(b), y);
    return y;
}

Tensor TransformerLayer::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                 const AttentionMask& mask, const KvSlot& cache) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    Tensor a = attention_.forward(input_norm_.forward(x, &s.input_norm), ctx,
                                  saved ? &s.attention : nullptr, mask, cache);
    if (saved && recompute_norms_) s.attention.qkv = {};  // rebuilt from the norm's input
    s.attention_dropout =
        draw_dropout(ctx, hidden_dropout_, a.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    Tensor h = sum(x, dropout_forward(*backend_, a, s.attention_dropout));
    const Tensor normed = pre_mlp_norm_.forward(h, &s.pre_mlp_norm);
    Tensor m;
    if (saved && recompute_mlp_) {  // only the MLP's input is kept (or rebuilt, see below)
        m = mlp_.forward(normed, nullptr);
        if (!recompute_norms_) s.mlp_input = normed;
    } else {
        m = mlp_.forward(normed, &s.mlp);
        if (saved && recompute_norms_) s.mlp.fc1 = {};
    }
    s.mlp_dropout =
        draw_dropout(ctx, hidden_dropout_, m.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    return sum(h, dropout_forward(*backend_, m, s.mlp_dropout));
}

Tensor TransformerLayer::backward(const Tensor& dy, const Saved& saved) {
    Tensor dm = dropout_backward(*backend_, dy, saved.mlp_dropout);
    // Selective recompute: what the forward did not keep is rebuilt here, bit for bit.
    Mlp::Saved mlp = saved.mlp;
    if (recompute_mlp_ || recompute_norms_) {
        const Tensor normed = recompute_norms_
                                  ? pre_mlp_norm_.forward(saved.pre_mlp_norm.input, nullptr)
                                  : saved.mlp_input;
        if (recompute_mlp_)
            mlp_.forward(normed, &mlp);
        else
            mlp.fc1 = mlp_.fc1().saved_for(normed);
    }
    Tensor dh = sum(dy, pre_mlp_norm_.backward(mlp_.backward(dm, mlp), saved.pre_mlp_norm));
    Tensor da = dropout_backward(*backend_, dh, saved.attention_dropout);
    SelfAttention::Saved attention = saved.attention;
    if (recompute_norms_)
        attention.qkv =
            attention_.linear_qkv().saved_for(input_norm_.forward(saved.input_norm.input, nullptr));
    Tensor dx_branch = input_norm_.backward(attention_.backward(da, attention), saved.input_norm);
    return sum(dh, dx_branch);
}

void TransformerLayer::collect_parameters(std::vector<Parameter*>& out) {
    input_norm_.collect_parameters(out);
    attention_.collect_parameters(out);
    pre_mlp_norm_.collect_parameters(out);
    mlp_.collect_parameters(out);
}

}  // namespace mt::nn
