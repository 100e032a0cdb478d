// Merging two attention partials of one query row computed over disjoint key sets (context
// parallelism's ring steps): with the partials' row log-sum-exps a and b, the merged row is
// out = out_a·e^(a - lse) + out_b·e^(b - lse) with lse = log(e^a + e^b). A partial that saw no
// key (lse -inf) gets weight 0.
#pragma once

#include "mt/kernels/hd.h"

namespace mt::k {

template <class T>
struct LseMerge {
    T weight_a, weight_b, lse;
};

template <class T>
MT_HD LseMerge<T> lse_merge(T a, T b) {
    const T m = a > b ? a : b;
    if (m == neg_inf<T>()) return {T(0), T(0), m};  // neither saw a key
    const T ea = k::exp(a - m), eb = k::exp(b - m), s = ea + eb;
    return {ea / s, eb / s, m + k::log(s)};
}

}  // namespace mt::k
