// TransformerBlock: Megatron-core's TransformerBlock (and MambaStack), the stack of layers and
// the final norm that GPT calls "decoder" and BERT "encoder": parameters under
// "<prefix>.layers.<i>." and "<prefix>.final_layernorm.", the layers' activations kept or, for
// the layers of a --recompute-granularity full segment, replayed in the backward.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/norm.h"
#include "mt/nn/recompute.h"
#include "mt/nn/transformer_config.h"
#include "mt/nn/transformer_layer.h"

namespace mt::nn {

// Which of the model's layers a block holds: a pipeline stage's [first_layer, first_layer +
// num_layers) (named by their index in the whole model), and the final norm on the last.
struct BlockPart {
    int64_t first_layer = 0;
    bool final_norm = true;
    // Its module: GPTModel's TransformerBlock says "final_layernorm", MambaStack "final_norm".
    std::string final_norm_name = "final_layernorm";
};

class MT_API TransformerBlock {
  public:
    struct Saved {
        std::vector<TransformerLayer::Saved> layers;  // empty for recomputed layers
        std::vector<Tensor> segment_inputs;           // per recompute segment
        std::vector<DropoutContext> segment_dropout;  // the dropout stream at each segment
        AttentionMask mask;
        std::optional<EncoderContext> encoder;  // a decoder's: what its recomputed layers read
        Norm::Saved final_norm;
    };

    // prefix: "decoder" (GPT) or "encoder" (BERT); each layer's modules as its spec builds them
    // (specs(i) for the model's layer i). Throws mt::Error for a recompute setting Megatron
    // refuses.
    TransformerBlock(const std::string& prefix, int64_t num_layers, const TransformerConfig& layer,
                     const LayerSpecs& specs, const RecomputeConfig& recompute, Backend& backend,
                     const BlockPart& part = {});
    TransformerBlock(const TransformerBlock&) = delete;
    TransformerBlock& operator=(const TransformerBlock&) = delete;

    // x (B, T, H) -> the final norm's output (B, T, H) (the last layer's after post-norm
    // layers), attending as `mask` says (and a decoder's cross-attention over `encoder`); saved
    // may be null (no backward).
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved, const AttentionMask& mask,
                   const EncoderContext* encoder = nullptr) const;
    // Inference over an inference state (or none): causal, no dropout, positions state->length()
    // .. (0 .. without a state), with an attention bias when defined (AttentionMask::bias: this
    // rank's heads x the T new positions x all past + T). Does not advance the state: the model
    // does, after every stage.
    Tensor forward_cached(const Tensor& x, InferenceState* state,
                          const EncoderContext* encoder = nullptr,
                          const Tensor& attention_bias = {}) const;
    // A step of continuous batching: row b of x (B, T, H) holds T new tokens of the request whose
    // state is states[b] (a batch-1 state at its own length). Does not advance the states.
    Tensor forward_rows(const Tensor& x, std::span<InferenceState* const> states) const;
    // Whether forward_rows can run this block (every layer's sublayers decode rows).
    bool decodes_rows() const;
    // An empty inference state for this block's layers: `batch` rows of up to `capacity`
    // positions.
    std::unique_ptr<InferenceState> make_inference_state(int64_t batch, int64_t capacity) const;
    // dy (B, T, H) -> dx; every parameter grad +=. grad_ready (may be empty) hears each
    // parameter as soon as its grad is final.
    Tensor backward(const Tensor& dy, const Saved& saved,
                    const std::function<void(const Parameter&)>& grad_ready);

    // The layers' and the final norm's parameters in Megatron-core's state-dict order.
    void collect_parameters(std::vector<Parameter*>& out);
    void collect_buffers(std::vector<Parameter*>& out);  // Model::buffers
    int64_t num_layers() const { return int64_t(layers_.size()); }

  private:
    std::vector<std::unique_ptr<TransformerLayer>> layers_;
    std::vector<RecomputeSegment> recompute_;
    std::optional<Norm> final_norm_;  // none after post-norm layers
};

}  // namespace mt::nn
