// Megatron's sliding-window attention (core_v0.19's --window-size and --window-attn-skip-freq):
// which layers attend through a window and how wide it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/nn/layer_spec.h"

namespace mt::nn {

struct MT_API AttentionWindows {
    // --window-size (left, right): each windowed layer's query sees the `left` keys before it
    // and itself (a causal model's right size is 0); -1: no window (the flag absent, or left -1,
    // Megatron's "infinite").
    int64_t left = -1;
    // Per layer of the whole model, whether it is windowed: --window-attn-skip-freq N leaves
    // every N-th layer (counting from 1) attending to every earlier key; a list expression
    // gives 1 (windowed) or 0 per layer; absent: every layer windowed.
    std::vector<bool> windowed;
    // --rotary-base-local (megatron.cpp's; Gemma 3's local layers, Megatron-Bridge's
    // rotary_base[0]): the windowed layers' rope base, their rope then plain (no scaling or
    // interpolation); 0: the model's rope.
    double local_rope_base = 0;

    bool enabled() const { return left >= 0; }
    // Layer `layer`'s window (TransformerConfig::attention_window): left or -1.
    int64_t of_layer(int64_t layer) const;
};

// --window-size and --window-attn-skip-freq with Megatron's help texts, and --rotary-base-local.
MT_API std::vector<FlagInfo> attention_window_flags();

// Reads them for a model of `num_layers` layers. mt::Error naming the flag for a malformed
// value, a right window other than 0 ("not supported yet") or a pattern of the wrong length.
MT_API AttentionWindows read_attention_windows(const ModelArgs& args, int64_t num_layers);

// `specs` with each layer's sublayers built on a config whose attention_window (and, for a
// windowed layer, rope base) is the layer's.
MT_API LayerSpecs with_attention_windows(LayerSpecs specs, AttentionWindows windows);

}  // namespace mt::nn
