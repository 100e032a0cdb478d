// Scaled dot-product attention on CPU tensors (f32 or f64), computed block-wise with an online
// softmax (flash-attention style): no T x T matrix is stored; the forward saves the per-row
// log-sum-exp and the backward recomputes the probabilities from it. Multi-head and
// grouped-query (query head h reads key/value group h / (nq / ng)), causal or full, optionally
// restricted to each query's document, with attention dropout from the counter-based Philox stream
// (replayable from seed and offset).
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

struct AttentionConfig {
    double scale = 1.0;    // applied to q.k before the softmax (Megatron: 1 / sqrt(head dim))
    bool causal = true;    // query t sees keys s <= t
    int64_t block = 64;    // query rows and keys per block of the online softmax
    float dropout = 0.0f;  // drop probability of each attention probability
    uint64_t seed = 0;     // dropout stream; element (b, h, t, s) uses counter
    uint64_t offset = 0;   //   offset + ((b * nq + h) * T + t) * T + s
    // Optional (B, T) row-major: query t of row b sees only keys >= document_start[b, t]
    // (Megatron's --reset-attention-mask: no attention across an EOD). Null: no such limit.
    const int32_t* document_start = nullptr;
};

// The dropout counters one call consumes (B * nq * T * T): the caller advances its offset.
MT_API uint64_t attention_dropout_counters(const Tensor& q);

// q (B, T, nq, hd); k, v (B, T, ng, hd), nq a multiple of ng. Overwrites
// out (B, T, nq, hd) = dropout(softmax(scale q k^T)) v and lse (B, nq, T) = log sum_s
// exp(scale q.k) over the visible keys (what backward needs besides q, k, v, out).
MT_API void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                              const AttentionConfig& config, Tensor& out, Tensor& lse);
// dout (B, T, nq, hd) with the forward's q, k, v, out, lse and config. Overwrites dq (like q),
// dk and dv (like k and v; group gradients sum over their query heads).
MT_API void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                               const Tensor& lse, const Tensor& dout, const AttentionConfig& config,
                               Tensor& dq, Tensor& dk, Tensor& dv);

// Inference attention of new queries over a key/value cache (no dropout, causal, nothing saved):
// q (B, Tq, nq, hd) holds the queries of positions past .. past+Tq-1; k_cache and v_cache
// (B, C, ng, hd), C >= past + Tq, hold the keys and values of positions 0 .. past+Tq-1. Query t
// sees keys s <= past + t. Overwrites out (B, Tq, nq, hd).
MT_API void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                             int64_t past, double scale, Tensor& out);

}  // namespace mt::ops
