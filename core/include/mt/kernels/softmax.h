// Row softmax pieces over the last dimension, with a scale applied before the exponential
// (attention's 1/sqrt(d)): y = softmax(scale * x). The row's normaliser is an OnlineMax folded
// over scale * x (masked entries excluded), so rows can be split and merged.
#pragma once

#include "mt/kernels/hd.h"
#include "mt/kernels/reduce.h"

namespace mt::k {

// y = exp(scale x - m) / s, with (m, s) the row's OnlineMax over scale * x and inv_s = 1 / s.
template <class T>
MT_HD T softmax_fwd(T x, T scale, T m, T inv_s) {
    return k::exp(scale * x - m) * inv_s;
}

// dx = scale * y (dy - dot), with dot = sum over the row of y * dy (a Sum<T>). Masked entries
// have y = 0, so their gradient is 0 without knowing the mask.
template <class T>
MT_HD T softmax_bwd(T y, T dy, T dot, T scale) {
    return scale * y * (dy - dot);
}

}  // namespace mt::k
