// Bit-for-bit equality of two tensors (shape, dtype and bytes), which the checkpoint round
// trips of this folder's tests promise.
#pragma once

#include <cstring>

#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

inline bool same_bytes(const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return ca.shape() == cb.shape() && ca.dtype() == cb.dtype() &&
           std::memcmp(ca.raw_data(), cb.raw_data(), ca.numel() * dtype_size(ca.dtype())) == 0;
}

}  // namespace mt::plugins::torch_ckpt
