// Inverted dropout on CPU tensors (f32 or f64, contiguous) from the counter-based Philox stream of
// mt/kernels/rng.h: element i's mask is a pure function of (seed, offset + i), so no mask is
// stored and backward (or a recompute) regenerates exactly the forward's mask.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// y = x * keep / (1 - p), keep ~ Bernoulli(1 - p). x, y: equal shapes. p is the drop
// probability in [0, 1]. The call uses counters [offset, offset + numel).
MT_API void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset, Tensor& y);
// dx = dy * keep / (1 - p) with the forward's (p, seed, offset).
MT_API void dropout_backward(const Tensor& dy, float p, uint64_t seed, uint64_t offset, Tensor& dx);

}  // namespace mt::ops
