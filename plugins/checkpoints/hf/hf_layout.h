// The tensor layouts that differ between Hugging Face and Megatron-core, both ways: GPT-2's
// Conv1D weights ([in, out]) against Linear's ([out, in]), and separate q/k/v against Megatron's
// linear_qkv rows grouped per query group. Any element size (f32, f16, bf16 alike).
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

// [a; b] along dim 0 (the same dtype and trailing shape).
Tensor concat_rows(const Tensor& a, const Tensor& b);

}  // namespace mt::plugins::hf
