// Which keys each query of a self-attention sees: Megatron's attention mask types (causal for
// GPT, padding for BERT) with the masks its datasets build, described rather than materialised
// as a (B, T, T) tensor.
#pragma once

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::nn {

struct AttentionMask {
    bool causal = true;  // query t sees keys s <= t; false: keys on both sides (bidirectional)
    // (B, T) i32, optional: query t of row b sees only keys >= document_start[b, t]
    // (--reset-attention-mask: no attention across an EOD).
    Tensor document_start;
    // (B) i32, optional: row b holds key_length[b] tokens, then padding no query attends to
    // (BERT's padding_mask). Outputs at padded positions are unspecified.
    Tensor key_length;
    // (heads, T, T), optional: added to each self-attention's scaled scores, this rank's heads
    // (ops::AttentionConfig::bias; T5's relative position buckets). In inference (T new
    // positions after `past` cached ones) (heads, T, past + T).
    Tensor bias;
    // Shaped as bias, optional: every layer's backward adds the bias's gradient into it.
    Tensor bias_grad;
};

// The key lengths (B) i32 of a padding mask (B, T) of 0/1 integers (1 = token) whose ones are a
// prefix of each row, as Megatron's datasets pad; an mt::Error names the first row that is not.
MT_API Tensor key_lengths_from_padding_mask(const Tensor& padding_mask);

}  // namespace mt::nn
