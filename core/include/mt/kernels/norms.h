// LayerNorm and RMSNorm per element, in Megatron's definitions: the row statistics come from
// reduce.h (Welford, SumSq), the backward's two row sums from NormGradSums.
// LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta.  RMSNorm: y = x / sqrt(mean(x^2)
// + eps) * gamma. With --apply-layernorm-1p (zero-centred gamma) the stored weight is gamma - 1.
#pragma once

#include "mt/kernels/hd.h"

namespace mt::k {

// The scale actually applied: weight, or weight + 1 for zero-centred gamma (apply-layernorm-1p).
template <class T>
MT_HD T norm_gamma(T weight, bool zero_centered_gamma) {
    return zero_centered_gamma ? weight + T(1) : weight;
}

// 1 / sqrt(var + eps): eps inside the root, as torch and apex/TE do. For RMSNorm var is mean(x^2).
template <class T>
MT_HD T norm_rstd(T var, T eps) {
    return k::rsqrt(var + eps);
}

// Forward, one element of a row. xhat = (x - mean) rstd is what the backward recomputes.
template <class T>
MT_HD T layer_norm_fwd(T x, T mean, T rstd, T gamma, T beta) {
    return (x - mean) * rstd * gamma + beta;
}
template <class T>
MT_HD T rms_norm_fwd(T x, T rstd, T gamma) {
    return x * rstd * gamma;
}

// The backward's row sums over the C elements of a row, with g = dy * gamma and xhat the
// normalised input. Mergeable like the states in reduce.h.
template <class T>
struct NormGradSums {
    T sum_g = T(0);       // sum g        (LayerNorm only)
    T sum_g_xhat = T(0);  // sum g * xhat
    MT_HD void add(T g, T xhat) {
        sum_g += g;
        sum_g_xhat += g * xhat;
    }
    MT_HD void merge(const NormGradSums& o) {
        sum_g += o.sum_g;
        sum_g_xhat += o.sum_g_xhat;
    }
};

// dx for one element, given the row's sums divided by C (mean_g, mean_g_xhat):
//   LayerNorm: dx = rstd (g - mean(g) - xhat mean(g xhat))
//   RMSNorm:   dx = rstd (g - xhat mean(g xhat))
// The parameter grads are dgamma += dy xhat, dbeta += dy (the same with zero-centred gamma).
template <class T>
MT_HD T layer_norm_bwd(T g, T xhat, T rstd, T mean_g, T mean_g_xhat) {
    return rstd * (g - mean_g - xhat * mean_g_xhat);
}
template <class T>
MT_HD T rms_norm_bwd(T g, T xhat, T rstd, T mean_g_xhat) {
    return rstd * (g - xhat * mean_g_xhat);
}

}  // namespace mt::k
