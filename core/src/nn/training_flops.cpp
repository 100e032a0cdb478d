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
    const double attention =
        expansion * L * h * h * ((1 + double(c.query_groups()) / heads + s / h / 2) * query_ratio);
    return double(samples) * s *
           (expansion * L * h * (double(c.ffn_hidden_size) * gated) + attention +
            3 * 2 * h * double(padded_vocab));
}

}  // namespace mt::nn
