#include "mt/nn/multi_token_prediction.h"

#include "mt/error.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::nn {

namespace {

// t (B, T) moved `shift` places left along the sequence, the last `shift` places 0: Megatron's
// roll_tensor applied `shift` times.
Tensor shifted(Backend& backend, const Tensor& t, int64_t shift) {
    const int64_t T = t.size(1);
    Tensor out = backend.zeros(t.shape(), t.dtype());
    if (shift >= T) return out;
    Tensor dst = out.slice(1, 0, T - shift);
    backend.copy(t.slice(1, shift, T), dst);
    return out;
}

}  // namespace

std::string mtp_loss_name(int64_t depth) {
    return "mtp_" + std::to_string(depth) + " loss";
}

MultiTokenPrediction::MultiTokenPrediction(int64_t depths, double loss_scaling_factor,
                                           const TransformerConfig& layer, const LayerSpec& spec,
                                           Backend& backend)
    : loss_scaling_factor_(loss_scaling_factor),
      hidden_(layer.hidden_size),
      backend_(&backend),
      tp_(layer.tp) {
    MT_CHECK(depths > 0, "--mtp-num-layers must be positive, got ", depths);
    for (int64_t k = 0; k < depths; ++k) {
        const std::string prefix = "mtp.layers." + std::to_string(k) + ".";
        // Megatron's MTP norms are the backend's plain norm modules in either --transformer-impl.
        auto norm = [&](const std::string& name) {
            return Norm(layer.normalization, prefix + name + ".weight", prefix + name + ".bias",
                        layer.hidden_size, layer.norm, layer.dtype, backend, layer.tp);
        };
        depths_.push_back(std::make_unique<Depth>(Depth{
            norm("enorm"), norm("hnorm"),
            Linear(prefix + "eh_proj", 2 * layer.hidden_size, layer.hidden_size, false, layer.dtype,
                   ShardSpec{ShardSpec::Kind::column, 0}, backend, layer.tp),
            std::make_unique<TransformerLayer>(prefix + "transformer_layer", layer, spec, backend),
            norm("final_layernorm")}));
    }
}

Losses MultiTokenPrediction::forward(const Tensor& hidden, const Tensor& tokens,
                                     const Tensor& labels, const Tensor& loss_mask,
                                     const Embedding& embedding, const OutputLoss& output,
                                     DropoutContext& ctx, Saved* saved,
                                     const AttentionMask& mask) const {
    if (saved) {
        *saved = Saved{};
        saved->depths.resize(depths_.size());
    }
    const double weight = loss_scaling_factor_ / double(depths_.size());
    Losses out;
    Tensor h = hidden;
    for (size_t i = 0; i < depths_.size(); ++i) {
        const Depth& d = *depths_[i];
        DepthSaved* s = saved ? &saved->depths[i] : nullptr;
        const int64_t shift = int64_t(i) + 1;
        // [enorm(embedding of the tokens ahead) | hnorm(h)], this rank's part of the sequence.
        const Tensor e = d.enorm.forward(
            embedding.forward(shifted(*backend_, tokens, shift), ctx, s ? &s->embedding : nullptr),
            s ? &s->enorm : nullptr);
        const Tensor hn = d.hnorm.forward(h, s ? &s->hnorm : nullptr);
        Tensor both = backend_->empty(with_last_dim(e.shape(), 2 * hidden_), e.dtype());
        Tensor left = both.slice(-1, 0, hidden_), right = both.slice(-1, hidden_, 2 * hidden_);
        backend_->copy(e, left);
        backend_->copy(hn, right);
        // eh_proj is column-parallel with its output gathered (then back to this rank's part of
        // the sequence under sequence parallelism), as Megatron's MTP layer does.
        Tensor x = scatter_to_sequence_parallel(
            tp_, gather_features(tp_, d.eh_proj.forward(both, s ? &s->eh_proj : nullptr)));
        x = d.layer->forward(x, ctx, s ? &s->layer : nullptr, mask);
        h = d.final_norm.forward(x, s ? &s->final_norm : nullptr);
        LossTerm term;
        term.name = mtp_loss_name(shift);
        term.values =
            output.forward(h, shifted(*backend_, labels, shift), s ? &s->output : nullptr);
        term.mask = shifted(*backend_, loss_mask, shift);
        term.reporting = LossTerm::Reporting::micro_batch_mean;
        term.grad_weight = weight;
        term.auxiliary = true;
        out.push_back(std::move(term));
    }
    return out;
}

Tensor MultiTokenPrediction::backward(const std::vector<Tensor>& dlosses, const Saved& saved,
                                      Embedding& embedding, OutputLoss& output) {
    MT_CHECK(dlosses.size() == depths_.size() && saved.depths.size() == depths_.size(),
             "MultiTokenPrediction: backward takes one loss gradient per depth (", depths_.size(),
             "), got ", dlosses.size());
    // The last depth first: each one's input gradient joins the previous depth's output's.
    Tensor dnext;
    for (size_t i = depths_.size(); i-- > 0;) {
        Depth& d = *depths_[i];
        const DepthSaved& s = saved.depths[i];
        Tensor dh = output.backward(dlosses[i], s.output);
        if (dnext.defined()) {
            Tensor sum = backend_->empty(dh.shape(), dh.dtype());
            backend_->add(dh, dnext, sum);
            dh = sum;
        }
        Tensor dx = d.layer->backward(d.final_norm.backward(dh, s.final_norm), s.layer);
        dx = gather_features_backward(tp_, scatter_to_sequence_parallel_backward(tp_, dx));
        const Tensor dboth = d.eh_proj.backward(backend_->contiguous(dx), s.eh_proj);
        embedding.backward(
            d.enorm.backward(backend_->contiguous(dboth.slice(-1, 0, hidden_)), s.enorm),
            s.embedding);
        dnext =
            d.hnorm.backward(backend_->contiguous(dboth.slice(-1, hidden_, 2 * hidden_)), s.hnorm);
    }
    return dnext;
}

void MultiTokenPrediction::collect_parameters(std::vector<Parameter*>& out) {
    for (auto& d : depths_) {
        d->enorm.collect_parameters(out);
        d->hnorm.collect_parameters(out);
        d->eh_proj.collect_parameters(out);
        d->layer->collect_parameters(out);
        d->final_norm.collect_parameters(out);
    }
}

void MultiTokenPrediction::collect_buffers(std::vector<Parameter*>& out) {
    for (auto& d : depths_) d->layer->collect_buffers(out);
}

}  // namespace mt::nn
