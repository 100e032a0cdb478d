// Megatron-core's MoELayer as a transformer layer's feed-forward block: router -> token dispatch
// -> local experts -> combine, plus the shared experts' MLP on every token
// ("<prefix>.mlp.router.*", "<prefix>.mlp.experts.*", "<prefix>.mlp.shared_experts.*"). Its norm
// stays a module of its own ("pre_mlp_layernorm"), also with Transformer Engine's names.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/moe_tracker.h"

namespace mt::nn {

// Which of a model's layers are MoE layers (Megatron's --moe-layer-freq): every k-th from layer 0
// for an integer k, or a 0/1 per layer. Throws mt::Error for a pattern of the wrong length.
struct MT_API MoeLayerPattern {
    std::vector<bool> moe;  // per layer of the whole model

    // The flag's text: an integer k, or Megatron's Python list expression of 0s and 1s
    // ("[0,1,1]", "([1]*3+[0]*1)*2": list literals, +, and * by an integer).
    static MoeLayerPattern parse(const std::string& text, int64_t num_layers);
    int64_t count() const;
};

// The spec of a model whose layers `pattern` marks are MoE layers (the others dense), the MoE
// layers reporting their auxiliary losses to `tracker` and taking their gradient scale from it.
MT_API std::function<LayerSpec(int64_t layer)> moe_layer_specs(MoeLayerPattern pattern,
                                                               std::shared_ptr<MoeTracker> tracker);

}  // namespace mt::nn
