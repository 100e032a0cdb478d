// Megatron's context parallelism: every micro-batch's sequence split into 2·cp chunks, rank r of
// the context-parallel group holding chunks r and 2·cp−1−r (so causal attention costs every
// rank the same; Megatron's get_batch_on_this_cp_rank), and the ring attention over them
// (mt/nn/ring_attention.h).
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/communicator.h"
#include "mt/tensor.h"

namespace mt::nn {

// The context-parallel group a model's sequence is split over. No group: the sequence is whole.
struct ContextParallel {
    Communicator* group = nullptr;

    int size() const { return group ? group->size() : 1; }
    int rank() const { return group ? group->rank() : 0; }
    bool active() const { return size() > 1; }
    // Where rank r's chunk c (0 or 1) starts in the whole sequence, for a local length of
    // `local_length` (two chunks): chunks r and 2·size − 1 − r.
    int64_t chunk_start(int r, int c, int64_t local_length) const {
        return (c == 0 ? r : 2 * size() - 1 - r) * local_length / 2;
    }
    // This rank's two.
    int64_t first_chunk_start(int64_t local_length) const {
        return chunk_start(rank(), 0, local_length);
    }
    int64_t second_chunk_start(int64_t local_length) const {
        return chunk_start(rank(), 1, local_length);
    }
};

// This rank's part of a host tensor along `dim` (the sequence, length a multiple of 2·cp): its
// two chunks side by side, a new contiguous tensor. `t` itself when cp is inactive.
MT_API Tensor context_parallel_slice(const ContextParallel& cp, const Tensor& t, int64_t dim = 1);

// The positions in the whole sequence of this rank's tokens, i64 (B, local_length) on the host
// (every row the same).
MT_API Tensor context_parallel_positions(const ContextParallel& cp, int64_t batch,
                                         int64_t local_length);

}  // namespace mt::nn
