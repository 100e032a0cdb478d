// TransformerLayer forward/backward: one residual branch per sublayer; the residual adds are
// explicit, and their gradient (dy itself) is added to each branch's input gradient.
#include "mt/nn/transformer_layer.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::nn {

namespace {

// The norm before a sublayer, named as the spec and the config's naming say.
Norm make_norm(const std::string& prefix, const SublayerSpec& spec, bool fused,
               const TransformerConfig& config, Backend& backend) {
    const std::string base = join_name(prefix, fused ? spec.fused_norm : spec.norm);
    return Norm(config.normalization, join_name(base, fused ? "layer_norm_weight" : "weight"),
                join_name(base, fused ? "layer_norm_bias" : "bias"), config.hidden_size,
                config.norm, config.dtype, backend, config.tp);
}

}  // namespace

TransformerLayer::TransformerLayer(const std::string& prefix, const TransformerConfig& config,
                                   const LayerSpec& spec, Backend& backend)
    : hidden_dropout_(config.hidden_dropout),
      backend_(&backend),
      tp_(config.tp),
      residual_from_norm_(config.apply_residual_connection_post_layernorm),
      recompute_norms_(config.recompute_norms) {
    MT_CHECK(!spec.sublayers.empty(), "layer ", prefix, ": its spec lists no sublayer");
    const bool te = config.norm_naming == NormNaming::transformer_engine;
    for (const SublayerSpec& s : spec.sublayers) {
        const bool fused = te && !s.fused_norm.empty();
        std::optional<Norm> post_norm;
        if (config.post_sublayer_norm) {
            MT_CHECK(!s.post_norm.empty(), "layer ", prefix,
                     ": not supported yet: --post-sublayer-norm on a sublayer other than "
                     "self-attention and the dense MLP");
            const std::string base = join_name(prefix, s.post_norm);
            post_norm.emplace(config.normalization, join_name(base, "weight"),
                              join_name(base, "bias"), config.hidden_size, config.norm,
                              config.dtype, backend, config.tp);
        }
        branches_.push_back(Branch{make_norm(prefix, s, fused, config, backend),
                                   s.build(prefix, config, backend), std::move(post_norm), fused,
                                   s.is_mlp && config.recompute_mlp});
    }
}

Tensor TransformerLayer::sum(const Tensor& a, const Tensor& b) const {
    Tensor y = backend_->empty(a.shape(), a.dtype());
    backend_->add(backend_->contiguous(a), backend_->contiguous(b), y);
    return y;
}

DropoutDraw TransformerLayer::draw_hidden_dropout(DropoutContext& ctx, int64_t numel) const {
    return draw_dropout(ctx, hidden_dropout_, numel, tp_.sequence_shard(), tp_.sequence_shards());
}

Tensor TransformerLayer::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                 const AttentionMask& mask, InferenceState::LayerStates* state,
                                 int64_t past, const EncoderContext* encoder,
                                 const LayerRows& rows) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    s.sublayers.clear();
    s.sublayers.resize(branches_.size());
    Tensor h = x;
    for (size_t i = 0; i < branches_.size(); ++i) {
        const Branch& b = branches_[i];
        SublayerSaved& bs = s.sublayers[i];
        std::vector<SublayerState*> row_states;
        for (InferenceState::LayerStates* row : rows.states) row_states.push_back((*row)[i].get());
        const SublayerContext in{
            mask, state ? (*state)[i].get() : nullptr, past, encoder, row_states, rows.pasts};
        const Tensor normed = b.norm.forward(h, &bs.norm);
        // With recompute_norms the modules do not keep the norms' outputs: backward rebuilds
        // them; a recomputed module keeps only its input (or not even that).
        Tensor a;
        if (saved && b.recompute) {
            a = b.module->forward(normed, ctx, nullptr, false, in);
            if (!recompute_norms_) bs.module_input = normed;
        } else {
            a = b.module->forward(normed, ctx, saved ? &bs.module : nullptr, !recompute_norms_, in);
        }
        if (b.post_norm) a = b.post_norm->forward(a, &bs.post_norm);
        bs.dropout = draw_hidden_dropout(ctx, a.numel());
        h = sum(residual_from_norm_ ? normed : h, dropout_forward(*backend_, a, bs.dropout));
    }
    return h;
}

bool TransformerLayer::decodes_rows() const {
    return std::all_of(branches_.begin(), branches_.end(),
                       [](const Branch& b) { return b.module->decodes_rows(); });
}

Tensor TransformerLayer::backward(const Tensor& dy, const Saved& saved) {
    MT_CHECK(saved.sublayers.size() == branches_.size(),
             "TransformerLayer: backward needs the activations of this layer's forward");
    Tensor dh = dy;
    for (size_t i = branches_.size(); i-- > 0;) {
        Branch& b = branches_[i];
        const SublayerSaved& bs = saved.sublayers[i];
        Tensor da = dropout_backward(*backend_, dh, bs.dropout);
        if (b.post_norm) da = b.post_norm->backward(da, bs.post_norm);
        // Selective recompute: what the forward did not keep is rebuilt here, bit for bit.
        Tensor normed;
        if (recompute_norms_)
            normed = b.norm.forward(bs.norm.input, nullptr);
        else if (b.recompute)
            normed = bs.module_input;
        Tensor dnormed;
        if (b.recompute) {
            std::unique_ptr<ModuleState> replayed;
            // Only the dense MLP recomputes alone (MoE layers refuse it): it draws no noise.
            DropoutContext noiseless{false};
            b.module->forward(normed, noiseless, &replayed, true, SublayerContext{AttentionMask{}});
            dnormed = b.module->backward(da, *replayed, Tensor());
        } else {
            dnormed = b.module->backward(da, *bs.module, normed);
        }
        // The residual's gradient joins the branch's before the norm when the branch added
        // to the norm's output, after it otherwise.
        if (residual_from_norm_)
            dh = b.norm.backward(sum(dnormed, dh), bs.norm);
        else
            dh = sum(dh, b.norm.backward(dnormed, bs.norm));
    }
    return dh;
}

void TransformerLayer::collect_parameters(std::vector<Parameter*>& out) {
    for (Branch& b : branches_) {
        if (!b.norm_fused) b.norm.collect_parameters(out);
        const size_t first = out.size();
        b.module->collect_parameters(out, b.norm_fused ? &b.norm : nullptr);
        if (!b.post_norm) continue;
        // A child of the linear it follows ("linear_proj.post_layernorm"): in megatron-core's
        // order it comes right after that linear's own parameters.
        std::vector<Parameter*> norm;
        b.post_norm->collect_parameters(norm);
        const std::string& name = norm.front()->name;
        const std::string linear = name.substr(0, name.rfind(".post_layernorm.") + 1);
        auto at = out.end();
        for (auto it = out.begin() + std::ptrdiff_t(first); it != out.end(); ++it)
            if ((*it)->name.starts_with(linear)) at = it + 1;
        out.insert(at, norm.begin(), norm.end());
    }
}

void TransformerLayer::collect_buffers(std::vector<Parameter*>& out) {
    for (Branch& b : branches_) b.module->collect_buffers(out);
}

InferenceState::LayerStates TransformerLayer::make_states(int64_t batch, int64_t capacity) const {
    InferenceState::LayerStates states;
    for (const Branch& b : branches_) states.push_back(b.module->make_state(batch, capacity));
    return states;
}

}  // namespace mt::nn
