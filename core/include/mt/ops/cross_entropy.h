// Cross-entropy of logits against integer targets on CPU tensors, per row (no reduction: the
// caller applies Megatron's loss mask and averaging). mt/kernels/cross_entropy.h holds the math.
#pragma once

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

// logits (N, V) or (B, T, V), f32 or f64; targets (N) or (B, T), i64 or i32, each in [0, V).
// Writes losses = lse - logits[target] and lse = log sum exp(logits), both shaped like targets
// of logits' dtype; lse is what the backward needs besides the logits.
MT_API void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& losses,
                                  Tensor& lse);
// dlogits (like logits, overwritten) = dlosses[row] * (softmax(logits) - onehot(target)).
// dlosses is shaped like targets (the upstream gradient of each row's loss).
MT_API void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                   const Tensor& dlosses, Tensor& dlogits);

// Vocab-parallel pieces (Megatron's vocab_parallel_cross_entropy): logits (N, V) hold the
// vocabulary columns [vocab_start, vocab_start + V) of each row; targets are whole-vocabulary
// ids. Writes this piece's row log-sum-exp `lse` and `target_logit` = the target's logit when
// it falls in the piece, else 0: summed over the pieces the target logits are the row's, and
// the pieces' lse merge by log-sum-exp.
MT_API void cross_entropy_shard_forward(const Tensor& logits, const Tensor& targets,
                                        int64_t vocab_start, Tensor& lse, Tensor& target_logit);
// dlogits of the piece = dlosses[row] * (exp(logits - lse) - onehot(target in this piece)),
// with lse the whole row's (merged) log-sum-exp.
MT_API void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets,
                                         int64_t vocab_start, const Tensor& lse,
                                         const Tensor& dlosses, Tensor& dlogits);

}  // namespace mt::ops
