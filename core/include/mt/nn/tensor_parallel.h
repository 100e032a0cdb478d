// Megatron's tensor-parallel mappings as forward/backward pairs: what crosses into a column-
// parallel region and out of a row-parallel one, with sequence parallelism (activations between
// the regions split along the sequence, dim 1 of (B, T, H)) or without.
#pragma once

#include "mt/api.h"
#include "mt/communicator.h"
#include "mt/tensor.h"

namespace mt::nn {

// The tensor-parallel group a module's shards live in. No group: the module is whole.
struct TensorParallel {
    Communicator* group = nullptr;
    bool sequence_parallel = false;  // --sequence-parallel

    int size() const { return group ? group->size() : 1; }
    int rank() const { return group ? group->rank() : 0; }
    bool active() const { return size() > 1; }
    bool sequence_split() const { return sequence_parallel && active(); }
    // Which part of the sequence this rank's activations outside the tensor-parallel regions
    // are (0 of 1 without sequence parallelism): dropout there draws that part of the site's
    // counters.
    int sequence_shard() const { return sequence_split() ? rank() : 0; }
    int sequence_shards() const { return sequence_split() ? size() : 1; }
};

// The sequence dimension of (B, T, H) activations.
inline constexpr int64_t kSequenceDim = 1;

// The partial sums passed to the all-reducing mappings are consumed: the result may share their
// storage.

// Into a column-parallel region. Forward: the input every rank needs (sequence parallel: the
// shards all-gathered along the sequence; else x itself, Megatron's copy_to_tensor_model_
// parallel_region). Backward of it: each rank's partial input gradient summed (all-reduce;
// sequence parallel: reduce-scatter back to the shards).
MT_API Tensor enter_column_parallel(const TensorParallel& tp, const Tensor& x);
MT_API Tensor enter_column_parallel_backward(const TensorParallel& tp, const Tensor& dx_partial);

// Out of a row-parallel region. Forward: the partial outputs summed (all-reduce, Megatron's
// reduce_from_tensor_model_parallel_region; sequence parallel: reduce-scatter along the
// sequence). Backward of it: the gradient each rank needs (identity; sequence parallel: the
// shards all-gathered).
MT_API Tensor leave_row_parallel(const TensorParallel& tp, const Tensor& y_partial);
MT_API Tensor leave_row_parallel_backward(const TensorParallel& tp, const Tensor& dy);

// Between replicated activations and sequence shards (Megatron's scatter_to_sequence_parallel_
// region and its backward, the all-gather); the identity without sequence parallelism.
MT_API Tensor scatter_to_sequence_parallel(const TensorParallel& tp, const Tensor& x);
MT_API Tensor scatter_to_sequence_parallel_backward(const TensorParallel& tp, const Tensor& dx);

// Out of a column-parallel linear whose output every rank needs whole (Megatron's
// gather_from_tensor_model_parallel_region): each rank's features all-gathered along the last
// dimension. Backward of it: this rank's part of the (replicated) gradient.
MT_API Tensor gather_features(const TensorParallel& tp, const Tensor& y);
MT_API Tensor gather_features_backward(const TensorParallel& tp, const Tensor& dy);

}  // namespace mt::nn
