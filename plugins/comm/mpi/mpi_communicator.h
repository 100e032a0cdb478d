// The "mpi" communicator: CPU tensors between the ranks of an MPI job (Open MPI on Debian).
// One MPI communicator handle per group; calls are made from one thread at a time.
#pragma once

#include <memory>

#include "mt/communicator.h"

namespace mt::plugins::mpi {

// A duplicate of MPI_COMM_WORLD (so our traffic never matches the program's own), initialising
// MPI on first use.
std::unique_ptr<Communicator> make_mpi_world();

}  // namespace mt::plugins::mpi
