// The Mamba-2 mixer's sizes (Megatron's --mamba-state-dim, --mamba-head-dim, --mamba-num-groups,
// --mamba-num-heads) and the fixed choices of Megatron's MambaMixer (a width-4 convolution, an
// inner width of twice the hidden size unless the heads say otherwise).
#pragma once

#include <cstdint>

namespace mt::nn {

struct MambaConfig {
    int64_t state_dim = 128;  // N
    int64_t head_dim = 64;    // hp
    int64_t num_groups = 8;   // ng: heads sharing B and C
    int64_t num_heads = 0;    // nh; 0: 2 * hidden_size / head_dim (Megatron's expand = 2)
    int64_t conv_width = 4;   // d_conv
    // The epsilon of the mixer's gated RMSNorm: Megatron's MambaMixer fixes it, whatever
    // --norm-epsilon says.
    static constexpr double gated_norm_epsilon = 1e-5;
    // The range Megatron's initialisation draws dt from (its dt_min, dt_max defaults).
    static constexpr double dt_min = 0.001, dt_max = 0.1;

    // The inner width d_inner = nh * hp for a model of `hidden_size`.
    int64_t heads(int64_t hidden_size) const {
        return num_heads > 0 ? num_heads : 2 * hidden_size / head_dim;
    }
};

}  // namespace mt::nn
