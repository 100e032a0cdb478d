#include "mt/nn/transformer_config.h"

namespace mt::nn {

double megatron_training_flops(const TransformerConfig& c, int64_t num_layers, int64_t seq_length,
                               int64_t padded_vocab, int64_t samples, const FlopsLayers& extra) {
    // transformer_flops(): 12 = 3 (forward + 2 backward) x 2 (multiply-add) x 2 (the two GEMMs of
    // each pair). The multi-token prediction depths count as layers.
    const double h = double(c.hidden_size), s = double(seq_length),
                 L = double(num_layers + extra.mtp), mtp = double(extra.mtp);
    const double moe_layers = double(extra.moe) + (extra.mtp_moe ? mtp : 0.0);
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
        const double q_term =
            m.q_lora_rank > 0 ? q_rank * (h + heads * (qk + rope) + 1) : h * heads * (qk + rope);
        attention = 3 * 2 * L *
                    (q_term + kv_rank * (h + heads * (qk + v) + 1) + h * rope + heads * v * h +
                     s * heads * (qk + rope) / 2 + s * heads * v / 2);
    }
    // Dense MLPs, then each MoE layer's routed experts (top-k of them) and shared experts.
    const double moe_ffn =
        double(c.moe.ffn_hidden_size > 0 ? c.moe.ffn_hidden_size : c.ffn_hidden_size);
    const double mlp =
        double(c.ffn_hidden_size) * gated * (L - moe_layers) +
        (moe_ffn * double(c.moe.router.topk) + double(c.moe.shared_expert_ffn_size)) * gated *
            moe_layers;
    // Each depth's three norms and eh_proj (2h -> h), and its pass through the output layer.
    const double mtp_extra = 3 * 2 * mtp * (3 * h + 2 * h * h);
    return double(samples) * s *
           (expansion * h * mlp + attention + mtp_extra +
            3 * 2 * h * double(padded_vocab) * (mtp + 1));
}

}  // namespace mt::nn
