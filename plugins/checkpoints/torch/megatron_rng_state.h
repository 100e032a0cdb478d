// Megatron's rng_state entries in its checkpoints (megatron/training/checkpointing.py
// get_rng_state): per data-parallel rank kept, {'random_rng_state': random.getstate(),
// 'np_rng_state': numpy.random.get_state() (its key a list, not an ndarray: what set_state
// takes), 'torch_rng_state', 'cuda_rng_state': byte tensors,
// 'rng_tracker_states': {name: byte tensor}}, with the states Megatron's seeding leaves
// (mt/checkpoint/megatron_rng.h).
#pragma once

#include "mt/checkpoint.h"
#include "mt/checkpoint/megatron_rng.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

// The rng_state list of the rank at `rank` (pipeline, tensor, expert, expert-tensor) of a run
// with `args` (its seed, data_parallel_random_init and data_parallel_size): one entry, or under
// --data-parallel-random-init one per data-parallel rank, as Megatron gathers them; empty for a
// seed numpy refuses (2^32 and above), with which Megatron cannot run either.
io::PyValue megatron_rng_state_list(const CheckpointArgs& args, MegatronRngRank rank);

}  // namespace mt::plugins::torch_ckpt
