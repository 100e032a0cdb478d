#include "mt/nn/transformer_block.h"

#include "mt/error.h"

namespace mt::nn {

TransformerBlock::TransformerBlock(const std::string& prefix, int64_t num_layers,
                                   const TransformerConfig& layer, const LayerSpecs& specs,
                                   const RecomputeConfig& recompute, Backend& backend,
                                   const BlockPart& part)
    : recompute_(recompute_segments(recompute, num_layers)) {
    if (part.final_norm)
        final_norm_.emplace(layer.normalization, prefix + "." + part.final_norm_name + ".weight",
                            prefix + "." + part.final_norm_name + ".bias", layer.hidden_size,
                            layer.norm, layer.dtype, backend, layer.tp);
    for (int64_t i = 0; i < num_layers; ++i)
        layers_.push_back(std::make_unique<TransformerLayer>(
            prefix + ".layers." + std::to_string(part.first_layer + i), layer,
            specs(part.first_layer + i), backend));
}

Tensor TransformerBlock::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                 const AttentionMask& mask, const EncoderContext* encoder) const {
    if (saved) {
        *saved = Saved{};
        saved->layers.resize(layers_.size());
        saved->mask = mask;
        if (encoder) saved->encoder = *encoder;
    }
    Tensor h = x;
    size_t segment = 0;
    for (int64_t i = 0; i < num_layers();) {
        if (saved && segment < recompute_.size() && recompute_[segment].begin == i) {
            // Only the segment's input and the dropout stream's state are kept.
            saved->segment_inputs.push_back(h);
            saved->segment_dropout.push_back(ctx);
            for (; i < recompute_[segment].end; ++i)
                h = layers_[size_t(i)]->forward(h, ctx, nullptr, mask, nullptr, 0, encoder);
            ++segment;
            continue;
        }
        h = layers_[size_t(i)]->forward(h, ctx, saved ? &saved->layers[size_t(i)] : nullptr, mask,
                                        nullptr, 0, encoder);
        ++i;
    }
    return final_norm_ ? final_norm_->forward(h, saved ? &saved->final_norm : nullptr) : h;
}

Tensor TransformerBlock::forward_cached(const Tensor& x, InferenceState* state,
                                        const EncoderContext* encoder,
                                        const Tensor& attention_bias) const {
    MT_CHECK(!state || state->num_layers() == layers_.size(),
             "TransformerBlock: the inference state "
             "holds ",
             state ? state->num_layers() : 0, " layers, the block ", layers_.size());
    DropoutContext no_dropout{false, 0, 0};
    const int64_t past = state ? state->length() : 0;
    AttentionMask mask;
    mask.bias = attention_bias;
    Tensor h = x;
    for (size_t i = 0; i < layers_.size(); ++i)
        h = layers_[i]->forward(h, no_dropout, nullptr, mask, state ? &state->layer(i) : nullptr,
                                past, encoder);
    return final_norm_ ? final_norm_->forward(h, nullptr) : h;
}

Tensor TransformerBlock::forward_rows(const Tensor& x,
                                      std::span<InferenceState* const> states) const {
    MT_CHECK(x.dim() == 3 && x.size(0) == int64_t(states.size()),
             "TransformerBlock: continuous batching reads tokens of each of ", states.size(),
             " rows, got ", x.describe());
    std::vector<int64_t> pasts;
    for (InferenceState* state : states) {
        MT_CHECK(state->batch() == 1 && state->num_layers() == layers_.size(),
                 "TransformerBlock: a row's inference state must hold one row of this block's ",
                 layers_.size(), " layers");
        pasts.push_back(state->length());
    }
    DropoutContext no_dropout{false, 0, 0};
    std::vector<InferenceState::LayerStates*> layer_states(states.size());
    Tensor h = x;
    for (size_t i = 0; i < layers_.size(); ++i) {
        for (size_t b = 0; b < states.size(); ++b) layer_states[b] = &states[b]->layer(i);
        h = layers_[i]->forward(h, no_dropout, nullptr, AttentionMask{}, nullptr, 0, nullptr,
                                LayerRows{layer_states, pasts});
    }
    return final_norm_ ? final_norm_->forward(h, nullptr) : h;
}

bool TransformerBlock::decodes_rows() const {
    for (const auto& layer : layers_)
        if (!layer->decodes_rows()) return false;
    return true;
}

std::unique_ptr<InferenceState> TransformerBlock::make_inference_state(int64_t batch,
                                                                       int64_t capacity) const {
    std::vector<InferenceState::LayerStates> layers;
    for (const auto& layer : layers_) layers.push_back(layer->make_states(batch, capacity));
    return std::make_unique<InferenceState>(batch, capacity, std::move(layers));
}

Tensor TransformerBlock::backward(const Tensor& dy, const Saved& saved,
                                  const std::function<void(const Parameter&)>& grad_ready) {
    MT_CHECK(saved.layers.size() == layers_.size(),
             "TransformerBlock: backward needs the activations of this block's forward");
    Tensor dh = dy;
    if (final_norm_) {
        dh = final_norm_->backward(dy, saved.final_norm);
        report_grads_ready(*final_norm_, grad_ready);
    }
    int64_t segment = int64_t(saved.segment_inputs.size()) - 1;
    for (int64_t i = num_layers() - 1; i >= 0;) {
        if (segment >= 0 && recompute_[size_t(segment)].end - 1 == i) {
            // Replay the segment's forward from its input with the same dropout draws, then
            // run its backward on the activations that gives.
            const RecomputeSegment& s = recompute_[size_t(segment)];
            DropoutContext replay = saved.segment_dropout[size_t(segment)];
            std::vector<TransformerLayer::Saved> replayed(size_t(s.end - s.begin));
            Tensor h = saved.segment_inputs[size_t(segment)];
            for (int64_t j = s.begin; j < s.end; ++j)
                h = layers_[size_t(j)]->forward(h, replay, &replayed[size_t(j - s.begin)],
                                                saved.mask, nullptr, 0,
                                                saved.encoder ? &*saved.encoder : nullptr);
            for (int64_t j = s.end - 1; j >= s.begin; --j) {
                dh = layers_[size_t(j)]->backward(dh, replayed[size_t(j - s.begin)]);
                report_grads_ready(*layers_[size_t(j)], grad_ready);
            }
            i = s.begin - 1;
            --segment;
            continue;
        }
        dh = layers_[size_t(i)]->backward(dh, saved.layers[size_t(i)]);
        report_grads_ready(*layers_[size_t(i)], grad_ready);
        --i;
    }
    return dh;
}

void TransformerBlock::collect_buffers(std::vector<Parameter*>& out) {
    for (auto& layer : layers_) layer->collect_buffers(out);
}

void TransformerBlock::collect_parameters(std::vector<Parameter*>& out) {
    for (auto& layer : layers_) layer->collect_parameters(out);
    if (final_norm_) final_norm_->collect_parameters(out);
}

}  // namespace mt::nn
