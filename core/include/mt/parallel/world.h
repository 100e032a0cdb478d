// The world communicator of a run: every process of an mpirun/mpiexec/srun job over MPI (or
// NCCL for GPU ranks), or the local group of one when the process was started on its own.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "mt/api.h"
#include "mt/communicator.h"

namespace mt {
class Registry;
}

namespace mt::parallel {

// True when a launcher started this process as one rank of a job: mpirun/mpiexec (Open MPI's
// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, MPICH/Hydra's PMI_RANK/PMI_SIZE) or an srun step of
// more than one task (SLURM_STEP_ID with SLURM_STEP_NUM_TASKS > 1; a plain salloc shell sets
// SLURM_* too, but no step, so a tool started from it runs alone).
MT_API bool launched_by_mpi();

// The world group: when launched_by_mpi(), the "mpi" communicator plugin (backend "cpu" or
// "mpi") or the "nccl" one (backend "cuda" or "nccl"), created through `registry` (which loads
// the plugin); otherwise make_local_communicator(). A launched process whose plugin cannot be
// loaded, or whose MPI sees a different world size than the launcher announced, fails with
// mt::Error rather than running as N independent single-process jobs.
MT_API std::unique_ptr<Communicator> make_world_communicator(Registry& registry,
                                                             std::string_view backend);

// Runs `body` as this rank's part of the job. An error on one rank of a job of several
// processes is printed as "error: rank R: ..." and stops every rank (Communicator::abort)
// instead of leaving the others waiting for it; alone, the error is rethrown.
MT_API void run_on_ranks(Communicator& world, const std::function<void()>& body);

}  // namespace mt::parallel
