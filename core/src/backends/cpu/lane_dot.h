// Row reductions with eight independent lanes, which vectorise without reassociation flags:
// a . b (b in the compute type T or stored narrower: bf16, widened element by element:
// detail::Element), and the largest element.
#pragma once

#include <algorithm>
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

// max(init, x[0], ..., x[n-1]), each lane folding its elements as std::max does (a NaN element
// is passed over, as the scalar loop passes it).
template <class T>
T lane_max(const T* x, int64_t n, T init) {
    T lane[8] = {init, init, init, init, init, init, init, init};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) lane[l] = std::max(lane[l], x[i + l]);
    for (int l = 0; i < n; ++i, ++l) lane[l] = std::max(lane[l], x[i]);
    T m = lane[0];
    for (int l = 1; l < 8; ++l) m = std::max(m, lane[l]);
    return m;
}

}  // namespace mt::cpu
