// InferenceState: what a causal model keeps between decoding steps so each new token is read
// once: per layer, each sublayer's own state (self-attention: the keys and values of every
// position read; a Mamba mixer: its convolution window and SSM state), and the positions filled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/nn/encoder_context.h"

namespace mt::nn {

// One sublayer's state; each sublayer defines its own.
struct SublayerState {
    virtual ~SublayerState() = default;
    // The memory its tensors hold (reserved for every position the state may reach).
    virtual int64_t bytes() const = 0;
};

// A state tensor's bytes (none when it is not made).
inline int64_t held_bytes(const Tensor& t) {
    return t.defined() ? t.nbytes() : 0;
}

class MT_API InferenceState {
  public:
    // One layer's sublayers' states in the layer's order; null for a sublayer that keeps none.
    using LayerStates = std::vector<std::unique_ptr<SublayerState>>;

    InferenceState(int64_t batch, int64_t capacity, std::vector<LayerStates> layers);
    ~InferenceState();  // runs on_release
    InferenceState(const InferenceState&) = delete;
    InferenceState& operator=(const InferenceState&) = delete;

    int64_t batch() const { return batch_; }
    int64_t capacity() const { return capacity_; }
    // Positions filled: the next token a model reads sits at position length().
    int64_t length() const { return length_; }
    LayerStates& layer(size_t i) { return layers_.at(i); }
    size_t num_layers() const { return layers_.size(); }
    // The memory every layer's states hold (the KV cache for capacity() positions, ...).
    int64_t bytes() const;

    // Marks n more positions filled (after every layer took them); mt::Error past capacity.
    void advance(int64_t n);
    // Forgets every position: the next forward starts at position 0 and each sublayer starts its
    // state afresh there (the memory is reused for the next batch).
    void clear() { length_ = 0; }

    // An encoder-decoder model's encoder output for these rows (Model::encode), which its
    // decoder's cross-attentions read at every step.
    EncoderContext encoder;
    // Called when the state goes (a model-parallel leader's: its followers drop their twins).
    std::function<void()> on_release;

  private:
    int64_t batch_, capacity_, length_ = 0;
    std::vector<LayerStates> layers_;
};

}  // namespace mt::nn
