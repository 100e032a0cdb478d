// Multi-latent attention's sizes and rotary embedding, as megatron-core's MLATransformerConfig
// takes them from --multi-latent-attention, --q-lora-rank, --kv-lora-rank, --qk-head-dim,
// --qk-pos-emb-head-dim, --v-head-dim, --rotary-scaling-factor, --mscale, --mscale-all-dim and
// --rope-type.
#pragma once

#include <cstdint>

namespace mt::nn {

struct MlaConfig {
    bool enabled = false;
    int64_t q_lora_rank = 0;  // 0: queries straight from the hidden states (linear_q_proj)
    int64_t kv_lora_rank = 32;
    int64_t qk_head_dim = 128;         // the part of each query and key head without rope
    int64_t qk_pos_emb_head_dim = 64;  // the rotated part (one key part shared by every head)
    int64_t v_head_dim = 128;
    // MLATransformerConfig's rope_type: "yarn" (its default, and Megatron 0.13's only one) or
    // plain "rope" (--rope-type rope, Megatron 0.19).
    bool yarn = true;
    double rotary_scaling_factor = 1.0, mscale = 1.0, mscale_all_dim = 1.0;
    // YaRN's correction range: Megatron 0.13 passes --max-position-embeddings as the original
    // context and keeps MLATransformerConfig's betas.
    int64_t original_max_positions = 4096;
    double beta_fast = 32, beta_slow = 1;

    int64_t q_head_dim() const { return qk_head_dim + qk_pos_emb_head_dim; }
};

}  // namespace mt::nn
