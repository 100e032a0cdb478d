// Context parallelism's causal ring attention (Transformer Engine's AttnFuncWithCPAndKVP2P):
// q, k, v hold this rank's chunks r and 2·cp−1−r of the sequence (mt/nn/context_parallel.h);
// the keys and values travel around the context-parallel group, one neighbour per step, while
// each step's partial attention is computed, and the partials are merged by their row
// log-sum-exps. Step i attends over the keys of rank r−i: at i = 0 its own (causal), for an
// earlier rank both chunks to its first chunk, for a later one its second chunk to both: each
// step computes only the scores some query sees.
#pragma once

#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/context_parallel.h"

namespace mt::nn {

// out (B, T, nq, hd) and lse (B, nq, T), as attention_forward gives them for the whole
// sequence's rows held here. steps[i] is step i's scale, block and dropout draw (its causal flag
// and key lengths are set here); cp.size() of them.
MT_API void ring_attention_forward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                                   const Tensor& k, const Tensor& v,
                                   const std::vector<ops::AttentionConfig>& steps, Tensor& out,
                                   Tensor& lse);
// dq, dk, dv (written) from dout, with the forward's inputs, out, lse and steps: the keys and
// values travel the ring again, their gradients with them, and come home after the last step.
MT_API void ring_attention_backward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                                    const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& dout,
                                    const std::vector<ops::AttentionConfig>& steps, Tensor& dq,
                                    Tensor& dk, Tensor& dv);

}  // namespace mt::nn
