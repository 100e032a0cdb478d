// The "nccl" communicator: CUDA tensors between GPU ranks, one GPU per rank (chosen by the
// rank's index among the ranks on its host), on a CUDA stream of its own.
#pragma once

#include <memory>

#include "mt/communicator.h"

namespace mt::plugins::nccl {

// The NCCL world over the ranks of `bootstrap` (an MPI world): rank 0 makes the unique id,
// `bootstrap` broadcasts it, every rank joins with ncclCommInitRank. The bootstrap is kept
// for abort() and to keep MPI alive as long as any NCCL group is.
std::unique_ptr<Communicator> make_nccl_world(std::unique_ptr<Communicator> bootstrap);

}  // namespace mt::plugins::nccl
