// Rotary position embeddings (RoPE) on CPU tensors (f32 or f64) in Megatron's default
// rotate-half convention (rotary_interleaved=False), with --rotary-percent and --rotary-base.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// The cos and sin of angle[t][i] = t * inv_freq[i], inv_freq[i] = 1 / base^(2i / R), each
// (T, R/2), for positions t in [0, T) and rotary dim R (even). f32 follows Megatron's float32
// arithmetic (inv_freq and the angle are rounded to float before cos/sin); f64 is exact.
struct RopeTables {
    Tensor cos;  // (T, R/2)
    Tensor sin;  // (T, R/2)
};
MT_API RopeTables rope_tables(int64_t seq_len, int64_t rotary_dim, double base, DType dtype);

// x, y (B, T, heads, D) with R = 2 * cos.size(1) <= D: per head, with x1 = x[:R/2],
// x2 = x[R/2:R] and c, s the tables at (t, i):
//   y1 = x1 c - x2 s,  y2 = x2 c + x1 s,  y[R:] = x[R:]
// y may alias x.
MT_API void rope_forward(const Tensor& x, const RopeTables& tables, Tensor& y);
// The transpose (rotation by -angle): dx from dy, same shapes; dx may alias dy.
MT_API void rope_backward(const Tensor& dy, const RopeTables& tables, Tensor& dx);

}  // namespace mt::ops
