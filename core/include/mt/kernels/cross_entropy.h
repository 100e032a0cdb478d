// Cross-entropy pieces over a row of logits (N, V): the row's log-sum-exp comes from an
// OnlineMax (mergeable, so a vocab-parallel split merges the shards' states).
//   loss = lse - logit[target],   dlogits = dloss * (softmax(logits) - onehot(target))
#pragma once

#include "mt/kernels/hd.h"
#include "mt/kernels/reduce.h"

namespace mt::k {

template <class T>
MT_HD T cross_entropy_loss(T lse, T target_logit) {
    return lse - target_logit;
}

// One element of dlogits from e = exp(logit - lse), which a backend may take for many at once.
template <class T>
MT_HD T cross_entropy_bwd_given(T e, bool is_target, T dloss) {
    return dloss * (e - (is_target ? T(1) : T(0)));
}
// One element of dlogits: dloss * (exp(logit - lse) - [is_target]).
template <class T>
MT_HD T cross_entropy_bwd(T logit, T lse, bool is_target, T dloss) {
    return cross_entropy_bwd_given(k::exp(logit - lse), is_target, dloss);
}

}  // namespace mt::k
