// Megatron's weight initialisation (init_method_normal / scaled_init_method_normal): weights
// N(0, init_method_std), the output projections of each layer (linear_proj, linear_fc2) N(0,
// std / sqrt(2 num_layers)), biases 0, norm weights 1 (0 with --apply-layernorm-1p, which stores
// gamma - 1). Normals come from Philox-4x32-10 (key = seed, counter = element index of the
// whole tensor and a hash of the parameter's name) through Box-Muller, so they depend only on
// (seed, name, index), whatever the tensor-parallel layout; they cannot equal PyTorch's draws.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

struct InitConfig {
    uint64_t seed = 0;
    double init_method_std = 0.02;
    int64_t num_layers = 1;  // scales the output projections
    bool apply_layernorm_1p = false;
    // muP's width multiplier: matrices other than the embeddings and the output layer are drawn
    // with std / sqrt(it).
    double mup_width_mult = 1.0;
};

MT_API void initialize_megatron(Backend& backend, const std::vector<Parameter*>& params,
                                const InitConfig& config);

}  // namespace mt::nn
