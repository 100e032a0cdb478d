// Embedding lookup on CPU tensors (f32 or f64): the forward gathers rows of a table by token id,
// the backward scatter-adds the output gradient back into the table's gradient.
#pragma once

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// table (V, H); ids (...) i64 or i32, each in [0, V); y (..., H) overwritten: y[i] = table[ids[i]].
MT_API void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& y);
// dtable (V, H) += the rows of dy (..., H) at ids (...): dtable[ids[i]] += dy[i].
MT_API void embedding_backward(const Tensor& dy, const Tensor& ids, Tensor& dtable);

}  // namespace mt::ops
