// TransformerLayer forward/backward: two pre-norm residual branches; the residual adds are
// explicit, and their gradient (dy itself) is added to each branch's input gradient.
#include "mt/nn/transformer_layer.h"

#include "mt/error.h"

namespace mt::nn {

namespace {

// te_linear: the linear the norm is fused into with Transformer Engine; local: the module name
// of the local spec.
// A post-norm layer's norms have plain module names (`local`) whatever the naming.
// fusable: whether the module after the norm takes it (a MoE block does not).
Norm make_norm(const std::string& prefix, const char* te_linear, const char* local,
               const TransformerConfig& config, Backend& backend, bool fusable = true) {
    const bool te =
        fusable && config.norm_naming == NormNaming::transformer_engine && !config.post_layer_norm;
    const std::string base = join_name(prefix, te ? te_linear : local);
    return Norm(config.normalization, join_name(base, te ? "layer_norm_weight" : "weight"),
                join_name(base, te ? "layer_norm_bias" : "bias"), config.hidden_size, config.norm,
                config.dtype, backend, config.tp);
}

}  // namespace

TransformerLayer::TransformerLayer(const std::string& prefix, const TransformerConfig& config,
                                   const LayerSpec& spec, Backend& backend)
    : hidden_dropout_(config.hidden_dropout),
      input_norm_(make_norm(prefix, "self_attention.linear_qkv",
                            config.post_layer_norm ? "post_self_attn_layernorm" : "input_layernorm",
                            config, backend)),
      mixer_(spec.mixer(prefix, config, backend)),
      pre_mlp_norm_(make_norm(prefix, "mlp.linear_fc1",
                              config.post_layer_norm ? "post_mlp_layernorm" : "pre_mlp_layernorm",
                              config, backend, spec.norm_fused_into_feed_forward)),
      feed_forward_(spec.feed_forward(prefix, config, backend)),
      backend_(&backend),
      tp_(config.tp),
      te_order_(config.norm_naming == NormNaming::transformer_engine && !config.post_layer_norm),
      mlp_norm_fused_(te_order_ && spec.norm_fused_into_feed_forward),
      post_norm_(config.post_layer_norm),
      recompute_mlp_(config.recompute_mlp),
      recompute_norms_(config.recompute_norms) {
    MT_CHECK(!post_norm_ || !(recompute_mlp_ || recompute_norms_),
             "not supported yet: selective recompute (--recompute-modules mlp/layernorm) of "
             "post-LayerNorm layers");
}

Tensor TransformerLayer::sum(const Tensor& a, const Tensor& b) const {
    Tensor y = backend_->empty(a.shape(), a.dtype());
    backend_->add(backend_->contiguous(a), backend_->contiguous(b), y);
    return y;
}

Tensor TransformerLayer::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                 const AttentionMask& mask, const KvSlot& cache) const {
    if (post_norm_) return forward_post_norm(x, ctx, saved, mask, cache);
    Saved local;
    Saved& s = saved ? *saved : local;
    // With recompute_norms the modules do not keep the norms' outputs: backward rebuilds them.
    Tensor a = mixer_->forward(input_norm_.forward(x, &s.input_norm), ctx,
                               saved ? &s.mixer : nullptr, !recompute_norms_, mask, cache);
    s.mixer_dropout =
        draw_dropout(ctx, hidden_dropout_, a.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    Tensor h = sum(x, dropout_forward(*backend_, a, s.mixer_dropout));
    const Tensor normed = pre_mlp_norm_.forward(h, &s.pre_mlp_norm);
    Tensor m;
    if (saved && recompute_mlp_) {  // only the block's input is kept (or rebuilt, see below)
        m = feed_forward_->forward(normed, ctx, nullptr, false);
        if (!recompute_norms_) s.feed_forward_input = normed;
    } else {
        m = feed_forward_->forward(normed, ctx, saved ? &s.feed_forward : nullptr,
                                   !recompute_norms_);
    }
    s.feed_forward_dropout =
        draw_dropout(ctx, hidden_dropout_, m.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    return sum(h, dropout_forward(*backend_, m, s.feed_forward_dropout));
}

Tensor TransformerLayer::backward(const Tensor& dy, const Saved& saved) {
    if (post_norm_) return backward_post_norm(dy, saved);
    Tensor dm = dropout_backward(*backend_, dy, saved.feed_forward_dropout);
    // Selective recompute: what the forward did not keep is rebuilt here, bit for bit.
    Tensor normed;
    if (recompute_mlp_ || recompute_norms_)
        normed = recompute_norms_ ? pre_mlp_norm_.forward(saved.pre_mlp_norm.input, nullptr)
                                  : saved.feed_forward_input;
    Tensor dnormed;
    if (recompute_mlp_) {
        std::unique_ptr<ModuleState> replayed;
        // Only the dense MLP recomputes alone (MoE layers refuse it): it draws no noise.
        DropoutContext noiseless{false};
        feed_forward_->forward(normed, noiseless, &replayed, true);
        dnormed = feed_forward_->backward(dm, *replayed, Tensor());
    } else {
        dnormed = feed_forward_->backward(dm, *saved.feed_forward, normed);
    }
    Tensor dh = sum(dy, pre_mlp_norm_.backward(dnormed, saved.pre_mlp_norm));
    Tensor da = dropout_backward(*backend_, dh, saved.mixer_dropout);
    const Tensor mixer_input =
        recompute_norms_ ? input_norm_.forward(saved.input_norm.input, nullptr) : Tensor();
    Tensor dx_branch =
        input_norm_.backward(mixer_->backward(da, *saved.mixer, mixer_input), saved.input_norm);
    return sum(dh, dx_branch);
}

Tensor TransformerLayer::forward_post_norm(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                           const AttentionMask& mask, const KvSlot& cache) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    Tensor a = mixer_->forward(x, ctx, saved ? &s.mixer : nullptr, true, mask, cache);
    s.mixer_dropout =
        draw_dropout(ctx, hidden_dropout_, a.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    const Tensor h =
        input_norm_.forward(sum(x, dropout_forward(*backend_, a, s.mixer_dropout)), &s.input_norm);
    Tensor m = feed_forward_->forward(h, ctx, saved ? &s.feed_forward : nullptr, true);
    s.feed_forward_dropout =
        draw_dropout(ctx, hidden_dropout_, m.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    return pre_mlp_norm_.forward(sum(h, dropout_forward(*backend_, m, s.feed_forward_dropout)),
                                 &s.pre_mlp_norm);
}

Tensor TransformerLayer::backward_post_norm(const Tensor& dy, const Saved& saved) {
    // y = norm2(h + m): the residual and the feed-forward branch share norm2's input gradient.
    const Tensor d2 = pre_mlp_norm_.backward(dy, saved.pre_mlp_norm);
    const Tensor dm = dropout_backward(*backend_, d2, saved.feed_forward_dropout);
    const Tensor dh = sum(d2, feed_forward_->backward(dm, *saved.feed_forward, Tensor()));
    const Tensor d1 = input_norm_.backward(dh, saved.input_norm);
    const Tensor da = dropout_backward(*backend_, d1, saved.mixer_dropout);
    return sum(d1, mixer_->backward(da, *saved.mixer, Tensor()));
}

void TransformerLayer::collect_parameters(std::vector<Parameter*>& out) {
    if (post_norm_) {  // each module, then the norm after its residual add
        mixer_->collect_parameters(out, nullptr);
        input_norm_.collect_parameters(out);
        feed_forward_->collect_parameters(out, nullptr);
        pre_mlp_norm_.collect_parameters(out);
        return;
    }
    if (!te_order_) input_norm_.collect_parameters(out);
    mixer_->collect_parameters(out, te_order_ ? &input_norm_ : nullptr);
    if (!mlp_norm_fused_) pre_mlp_norm_.collect_parameters(out);
    feed_forward_->collect_parameters(out, mlp_norm_fused_ ? &pre_mlp_norm_ : nullptr);
}

}  // namespace mt::nn
