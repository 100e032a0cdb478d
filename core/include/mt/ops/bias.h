// Bias over the last dimension of CPU tensors (f32 or f64): the forward adds a (C) vector to
// every row, the backward sums the rows of the gradient into the bias gradient.
#pragma once

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// y (..., C) += bias (C) on every row.
MT_API void add_bias(const Tensor& bias, Tensor& y);
// dbias (C) += sum over the rows of dy (..., C).
MT_API void add_column_sums(const Tensor& dy, Tensor& dbias);

}  // namespace mt::ops
