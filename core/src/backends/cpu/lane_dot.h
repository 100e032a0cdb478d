// a . b with eight independent partial sums: vectorises without reassociation flags. b in the
// compute type T or stored narrower (bf16, widened element by element: detail::Element).
#pragma once

#include <cstdint>

#include "op_support.h"

namespace mt::cpu {

template <class T, class S = T>
T lane_dot(const T* a, const S* b, int64_t n) {
    using E = detail::Element<S>;
    T lane[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) lane[l] += a[i + l] * E::load(b[i + l]);
    for (int l = 0; i < n; ++i, ++l) lane[l] += a[i] * E::load(b[i]);
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) +
           ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace mt::cpu
