// The flags of Megatron's pretrain_mamba.py (core_v0.19: pretrain_hybrid.py) beyond the
// transformer ones: the Mamba mixer's sizes and which layers are Mamba, attention-only or
// MLP-only (nn::allocate_hybrid_layers).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "mt/model.h"
#include "mt/nn/mamba_config.h"
#include "mt/nn/transformer_args.h"

namespace mt::plugins::gpt {

struct HybridArgs {
    bool is_hybrid_model = false;  // --is-hybrid-model: Megatron counts the FLOPs as hybrid's
    nn::MambaConfig mamba;
    std::string layers;                   // a symbol per layer: 'M', '*', '-' or 'E'
    std::vector<std::string> allocation;  // Megatron's log lines about it

    int64_t count(char symbol) const { return int64_t(std::count(layers.begin(), layers.end(), symbol)); }
};

std::vector<FlagInfo> hybrid_flags();
// --spec's default for Megatron's Mamba stack: pretrain_mamba.py's
// "megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec", or with core_v0.19's
// --hybrid-layer-pattern its pretrain_hybrid.py's "megatron.core.models.hybrid.
// hybrid_layer_specs hybrid_stack_spec".
std::string mamba_stack_spec(const ModelArgs& args);

// Reads the flags for a model of `num_layers` layers (a pattern's '|' separators are not layers:
// the run's parallel config places the segments); mt::Error names the flag for anything refused.
HybridArgs read_hybrid_args(const ModelArgs& args, int64_t num_layers);

}  // namespace mt::plugins::gpt

namespace mt::plugins::gpt {

// Megatron's num_floating_point_operations for a model with --is-hybrid-model (training.py's
// hybrid_flops: forward x 3) over `samples` sequences.
double hybrid_training_flops(const nn::TransformerArgs& config, const HybridArgs& hybrid,
                             int64_t samples);

}  // namespace mt::plugins::gpt
