// Which of a model's layers are MoE layers (Megatron's --moe-layer-freq): every k-th from layer 0
// for an integer k, or Megatron's Python list expression of 0s and 1s, one per layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::nn {

// A per-layer list expression as Megatron evaluates it (list literals, +, and * by an integer:
// "[0,1,1]", "([1]*3+[0]*1)*2"): its integers, or mt::Error naming --`flag`.
MT_API std::vector<int64_t> read_layer_list(const std::string& text, const char* flag);

struct MT_API MoeLayerPattern {
    std::vector<bool> moe;  // per layer of the whole model
    // Per layer, its MoE layer's experts where they differ by layer (Megatron-DeepSpeed's
    // --num-experts list, PR-MoE's pyramid); empty: every MoE layer has --num-experts.
    std::vector<int64_t> experts;

    // The flag's text: an integer k, or a list expression ("[0,1,1]", "([1]*3+[0]*1)*2": list
    // literals, +, and * by an integer). Throws mt::Error for anything else or a pattern of the
    // wrong length.
    static MoeLayerPattern parse(const std::string& text, int64_t num_layers);
    // Megatron-DeepSpeed's get_num_experts_per_layer: layers interval, 2·interval, ... (1-based)
    // are MoE layers, the i-th of them with num_experts[i] experts (one value: all of them);
    // those of one expert are dense. mt::Error for a list of another length.
    static MoeLayerPattern deepspeed(const std::vector<int64_t>& num_experts, int64_t interval,
                                     int64_t num_layers);
    // Layer `layer`'s experts in a model of `num_experts` (--num-experts).
    int64_t experts_of(int64_t layer, int64_t num_experts) const {
        return experts.empty() ? num_experts : experts[size_t(layer)];
    }
    int64_t count() const;
};

}  // namespace mt::nn
