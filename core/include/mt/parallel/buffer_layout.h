// Where Megatron's ParamAndGradBuffer puts each parameter: parameters in backward order (the
// last registered first), cut into buckets of --ddp-bucket-size elements; with the distributed
// optimizer each parameter starts on a 64-element boundary and each bucket ends on a multiple
// of lcm(dp, 128), so it divides into equal, aligned rank shards. The gradient buffer and the
// distributed optimizer's checkpoint file (distrib_optim.pt) both follow it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/dtype.h"

namespace mt::parallel {

struct DataParallelConfig {
    // Elements per bucket (--ddp-bucket-size; 0: Megatron's default, max(40M, 1M·dp)), with
    // --overlap-grad-reduce only: without it the buffer is one bucket, as in Megatron's DDP.
    int64_t bucket_size = 0;
    bool overlap_grad_reduce = false;    // --overlap-grad-reduce
    bool distributed_optimizer = false;  // --use-distributed-optimizer
    // --num-distributed-optimizer-instances: the data-parallel ranks split into this many
    // instances of consecutive ranks, the optimizer sharded within each and replicated across
    // them (Megatron's partial distributed optimizer).
    int distributed_optimizer_instances = 1;
    // The dtype buckets are summed in (--grad-reduce-in-bf16 with --bf16: bf16, as Megatron's
    // main_grad buffer; the f32 buffer is rounded to it, sent in it and widened back).
    DType reduce_dtype = DType::f32;
};

struct MT_API BufferLayout {
    struct Bucket {
        int64_t begin = 0, end = 0;  // buffer elements; end padded
        int64_t numel_unpadded = 0;  // from begin to the end of its last parameter
        std::vector<size_t> params;  // indices into the parameter list, in buffer order
    };
    std::vector<int64_t> offsets;   // per parameter (in the order given): where it starts
    std::vector<size_t> bucket_of;  // per parameter: its bucket
    std::vector<Bucket> buckets;
    int64_t numel = 0;  // the whole buffer, padding included

    // Megatron's numel_unpadded: the buckets' unpadded sizes summed.
    int64_t numel_unpadded() const;
    // Where parameter i starts once every bucket's end padding is cut out, as
    // get_parameter_state_dp_zero lays out its "world" tensors.
    int64_t unpadded_offset(size_t i) const;
};

// The layout of parameters with `numels` elements (in registration order) among `dp_size`
// data-parallel ranks. With the distributed optimizer a parameter flagged in `own_bucket` (empty:
// none) takes a bucket of its own: Megatron's shared embedding, the word embeddings of the first
// pipeline stage and the output layer of the last when several stages tie them.
MT_API BufferLayout buffer_layout(const std::vector<int64_t>& numels, int64_t dp_size,
                                  const DataParallelConfig& config,
                                  const std::vector<bool>& own_bucket = {});

}  // namespace mt::parallel
