// Megatron's hybrid layer allocation (mamba_hybrid_layer_allocation.py's allocate_layers): which
// of a hybrid model's layers are Mamba ('M'), attention-only ('*'), MLP-only ('-') or, in an
// override pattern, MoE-only ('E', core_v0.19's hybrid_layer_allocation), from
// --hybrid-attention-ratio / --hybrid-mlp-ratio (evenly spaced, as Megatron places them) or
// --hybrid-override-pattern, with the lines Megatron logs about it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::nn {

struct HybridAllocation {
    std::string layers;              // one symbol per layer
    std::vector<std::string> lines;  // Megatron's log lines, in order
};

// mt::Error with Megatron's message for an override pattern of the wrong length, an unknown
// symbol, or counts that differ from the ratios' allocation (when a ratio is set), and for
// ratios outside [0, 1] or summing above 1.
// The layers of each pipeline segment of a pattern (core_v0.19's '|' separators: one segment per
// model chunk); one segment when it has none.
MT_API std::vector<int64_t> hybrid_pipeline_segments(const std::string& pattern);

// The layers of a pattern (its symbols but the '|' separators).
MT_API int64_t hybrid_pattern_layers(const std::string& pattern);

// The override pattern may hold '|' separators, which are not layers (the layers come without
// them).
MT_API HybridAllocation allocate_hybrid_layers(int64_t num_layers, double attention_ratio,
                                               double mlp_ratio,
                                               const std::optional<std::string>& override_pattern);

}  // namespace mt::nn
