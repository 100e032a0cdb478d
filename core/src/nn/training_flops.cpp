#include "mt/nn/transformer_config.h"

namespace mt::nn {

double megatron_training_flops(const TransformerConfig& c, int64_t num_layers, int64_t seq_length,
                               int64_t padded_vocab, int64_t samples) {
    // transformer_flops() for a dense model without MTP: 12 = 3 (forward + 2 backward) x 2
    // (multiply-add) x 2 (the two GEMMs of each pair).
    const double h = double(c.hidden_size), s = double(seq_length), L = double(num_layers);
    const double expansion = 3 * 2 * 2;
    const double gated = c.gated_linear_unit ? 3.0 / 2.0 : 1.0;
    const double heads = double(c.num_attention_heads);
    const double query_ratio = double(c.head_dim()) * heads / h;
    double attention =
        expansion * L * h * h * ((1 + double(c.query_groups()) / heads + s / h / 2) * query_ratio);
    if (const MlaConfig& m = c.mla; m.enabled) {
        // The projections (each norm counted as one column), then half the score and value
        // products of the causal attention.
        const double qk = double(m.qk_head_dim), rope = double(m.qk_pos_emb_head_dim),
                     v = double(m.v_head_dim), q_rank = double(m.q_lora_rank),
                     kv_rank = double(m.kv_lora_rank);
        const double q_term = m.q_lora_rank > 0 ? q_rank * (h + heads * (qk + rope) + 1)
                                                : h * heads * (qk + rope);
        attention = 3 * 2 * L *
                    (q_term + kv_rank * (h + heads * (qk + v) + 1) + h * rope + heads * v * h +
                     s * heads * (qk + rope) / 2 + s * heads * v / 2);
    }
    return double(samples) * s *
           (expansion * L * h * (double(c.ffn_hidden_size) * gated) + attention +
            3 * 2 * h * double(padded_vocab));
}

}  // namespace mt::nn
