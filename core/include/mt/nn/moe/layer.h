// Megatron-core's MoELayer as a transformer layer's feed-forward block: router -> token dispatch
// -> local experts -> combine, plus the shared experts' MLP on every token
// ("<prefix>.mlp.router.*", "<prefix>.mlp.experts.*", "<prefix>.mlp.shared_experts.*"). Also
// Megatron-DeepSpeed's (DeepSpeed's MoE layer): its gate as the router (GShardGating), and
// PR-MoE's residual MLP mixed in by a learned coefficient. Its norm
// stays a module of its own ("pre_mlp_layernorm"), also with Transformer Engine's names.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/moe/layer_pattern.h"
#include "mt/nn/moe/tracker.h"

namespace mt::nn {

// The MoE block behind its own norm ("pre_mlp_layernorm", also with Transformer Engine's names),
// reporting to `tracker` as layer `layer` of the whole model, with `experts` experts (0: the
// config's --num-experts): a hybrid model's 'E' layers are this alone.
MT_API SublayerSpec moe_sublayer(std::shared_ptr<MoeTracker> tracker, int64_t layer,
                                 int64_t experts = 0);

// The spec of a model whose layers `pattern` marks are MoE layers (the others dense), the MoE
// layers reporting their auxiliary losses to `tracker` and taking their gradient scale from it;
// every layer's attention multi-latent with `multi_latent`.
MT_API std::function<LayerSpec(int64_t layer)> moe_layer_specs(MoeLayerPattern pattern,
                                                               std::shared_ptr<MoeTracker> tracker,
                                                               bool multi_latent = false);

}  // namespace mt::nn
