// The per-element AdamW step (decoupled weight decay), in torch.optim.AdamW's operation order;
// algebraically the same as apex/TE FusedAdam(adam_w_mode=True) that Megatron uses:
//   p -= lr (m_hat / (sqrt(v_hat) + eps) + wd p),  m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t)
#pragma once

#include "mt/kernels/hd.h"

namespace mt::k {

// The scalars of step t, computed once in double (as torch does in Python) and rounded to float
// where torch hands them to its float kernels.
struct AdamW {
    float decay;            // 1 - lr wd
    float beta1_weight;     // 1 - b1, the lerp weight of the first moment
    float beta2;            // b2
    float one_minus_beta2;  // 1 - b2
    float bias2_sqrt;       // sqrt(1 - b2^t)
    float eps;              // added after the square root
    float neg_step_size;    // -lr / (1 - b1^t)

    // t counts from 1 (the first step).
    MT_HD static AdamW at_step(double lr, double beta1, double beta2, double eps,
                               double weight_decay, int64_t t) {
        double bias1 = 1.0 - ::pow(beta1, double(t));
        double bias2 = 1.0 - ::pow(beta2, double(t));
        return AdamW{float(1.0 - lr * weight_decay),
                     float(1.0 - beta1),
                     float(beta2),
                     float(1.0 - beta2),
                     float(::sqrt(bias2)),
                     float(eps),
                     float(-(lr / bias1))};
    }

    // One element: p (param), g (grad), m (exp_avg), v (exp_avg_sq) in torch's order: decay the
    // parameter, lerp m towards g, v = b2 v + (1 - b2) g^2, then p += -step * m / denom.
    MT_HD void step(float& p, float g, float& m, float& v) const {
        p *= decay;
        m = beta1_weight < 0.5f ? m + beta1_weight * (g - m)
                                : g - (g - m) * (1.0f - beta1_weight);  // torch's lerp branches
        v = v * beta2 + one_minus_beta2 * g * g;
        float denom = sqrtf(v) / bias2_sqrt + eps;
        p += neg_step_size * m / denom;
    }
};

}  // namespace mt::k
