// Softmax over the last dimension of CPU tensors (f32, contiguous) with a scale applied first
// (attention scores: softmax(x / sqrt(d))) and an optional causal mask; mt/kernels/softmax.h
// holds the math. Backward needs only the forward's output.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

enum class SoftmaxMask : uint8_t {
    none,
    // Query t (second-last dim, size T) sees keys s <= t + (S - T) (last dim, size S >= T):
    // the upper triangle for T == S, bottom-right aligned when keys include a cached prefix.
    // Masked entries get probability 0.
    causal,
};

// x, y: (B, heads, T, S) or any (..., T, S) for causal, (..., S) otherwise.
//   y = softmax(scale * x) over the last dim
MT_API void softmax_forward(const Tensor& x, float scale, SoftmaxMask mask, Tensor& y);
// y (the forward's output), dy, dx: equal shapes.  dx = scale * y * (dy - sum(y * dy))
MT_API void softmax_backward(const Tensor& y, const Tensor& dy, float scale, Tensor& dx);

}  // namespace mt::ops
