// Tensor-parallel mappings: each forward is the other's backward (copy <-> all-reduce,
// all-gather <-> reduce-scatter, split <-> all-gather).
#include "mt/nn/tensor_parallel.h"

#include "mt/parallel/collectives.h"

namespace mt::nn {

namespace {

// In place when x is contiguous: partial sums are temporaries nobody reads again.
Tensor all_reduced(const TensorParallel& tp, const Tensor& x) {
    Tensor y = x.contiguous();
    tp.group->all_reduce(y, ReduceOp::sum);
    return y;
}

}  // namespace

Tensor enter_column_parallel(const TensorParallel& tp, const Tensor& x) {
    if (!tp.sequence_split()) return x;
    return parallel::all_gather_along(*tp.group, x, kSequenceDim);
}

Tensor enter_column_parallel_backward(const TensorParallel& tp, const Tensor& dx_partial) {
    if (!tp.active()) return dx_partial;
    if (tp.sequence_parallel)
        return parallel::reduce_scatter_along(*tp.group, dx_partial, kSequenceDim, ReduceOp::sum);
    return all_reduced(tp, dx_partial);
}

Tensor leave_row_parallel(const TensorParallel& tp, const Tensor& y_partial) {
    if (!tp.active()) return y_partial;
    if (tp.sequence_parallel)
        return parallel::reduce_scatter_along(*tp.group, y_partial, kSequenceDim, ReduceOp::sum);
    return all_reduced(tp, y_partial);
}

Tensor leave_row_parallel_backward(const TensorParallel& tp, const Tensor& dy) {
    return enter_column_parallel(tp, dy);
}

Tensor scatter_to_sequence_parallel(const TensorParallel& tp, const Tensor& x) {
    if (!tp.sequence_split()) return x;
    return parallel::split_along(*tp.group, x, kSequenceDim);
}

Tensor scatter_to_sequence_parallel_backward(const TensorParallel& tp, const Tensor& dx) {
    return enter_column_parallel(tp, dx);
}

Tensor gather_features(const TensorParallel& tp, const Tensor& y) {
    return tp.active() ? parallel::all_gather_along(*tp.group, y, -1) : y;
}

Tensor gather_features_backward(const TensorParallel& tp, const Tensor& dy) {
    return tp.active() ? parallel::split_along(*tp.group, dy, -1) : dy;
}

}  // namespace mt::nn
