// The tensor layouts that differ between Hugging Face and Megatron-core, both ways: GPT-2's
// Conv1D weights ([in, out]) against Linear's ([out, in]), separate q/k/v against Megatron's
// linear_qkv rows grouped per query group, DeepSeek's interleaved rotary rows. Any element size
// (f32, f16, bf16 alike).
#pragma once

#include <cstdint>

#include "mt/tensor.h"

namespace mt::plugins::hf {

// A 2-D tensor transposed into a new contiguous one ([in, out] <-> [out, in]).
Tensor transposed(const Tensor& t);

// Megatron's linear_qkv rows: for each query group g, its (nq/ng) query heads, then its key
// head, then its value head. q, k, v are [heads·hd, ...] row blocks (weights or biases).
Tensor group_qkv(const Tensor& q, const Tensor& k, const Tensor& v, int64_t nq, int64_t ng,
                 int64_t hd);

struct Qkv {
    Tensor q, k, v;  // [nq·hd, ...], [ng·hd, ...], [ng·hd, ...]
};
// The inverse of group_qkv: the query, key and value rows of a linear_qkv weight or bias.
Qkv ungroup_qkv(const Tensor& qkv, int64_t nq, int64_t ng, int64_t hd);

// DeepSeek's rotary rows: in each block of `block` rows, the `rope` rows from `offset`. Megatron's
// multi-latent attention rotates them as DeepSeek's weights lay them out, in interleaved pairs
// (x0, x1), (x2, x3), ... (transformers' rope_interleave); a folder without rope_interleave
// holds halves, x_i paired with x_{i + rope/2}: interleaved_rope_rows puts those in pairs.
Tensor interleaved_rope_rows(const Tensor& t, int64_t block, int64_t offset, int64_t rope);

// [a; b] along dim 0 (the same dtype and trailing shape).
Tensor concat_rows(const Tensor& a, const Tensor& b);

}  // namespace mt::plugins::hf
