// Context parallelism by gathering the keys and values (Megatron's --cp-comm-type all_gather):
// every rank gathers the whole sequence's keys and values and attends its two chunks' queries
// over the keys up to them, so any causal mask the attention kernel takes (a sliding window,
// attention sinks) holds across the ranks. The ring (ring_attention.h) passes the keys around
// instead, for the plain causal mask.
#pragma once

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/context_parallel.h"

namespace mt::nn {

// q (B, T, nq, hd), k and v (B, T, ng, hd): this rank's two chunks of the sequence (T = 2 L,
// at cp.first_chunk_start(T) and cp.second_chunk_start(T)). out (B, T, nq, hd) and lse
// (B, nq, T) written, as one process attending over the whole sequence with `config` (causal;
// its window and sink; no dropout, documents, padding or bias) gives them for these rows.
MT_API void gathered_attention_forward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                                       const Tensor& k, const Tensor& v,
                                       const ops::AttentionConfig& config, Tensor& out,
                                       Tensor& lse);
// dq, dk, dv (written) from dout: each chunk's attention is made again and differentiated, the
// keys' and values' gradients summed over the ranks and each rank's chunks kept; config.sink_grad
// (when defined) gets this rank's queries' part of the sinks' gradient added.
MT_API void gathered_attention_backward(Backend& backend, const ContextParallel& cp,
                                        const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& dout, const ops::AttentionConfig& config,
                                        Tensor& dq, Tensor& dk, Tensor& dv);

}  // namespace mt::nn
