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

    // The flag's text: an integer k, or a list expression ("[0,1,1]", "([1]*3+[0]*1)*2": list
    // literals, +, and * by an integer). Throws mt::Error for anything else or a pattern of the
    // wrong length.
    static MoeLayerPattern parse(const std::string& text, int64_t num_layers);
    int64_t count() const;
};

}  // namespace mt::nn
