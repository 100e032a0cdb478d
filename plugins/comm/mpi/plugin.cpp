// Plugin entry of libmt_comm_mpi.so: the "mpi" communicator over MPI_COMM_WORLD.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("comm", "mpi", "0.1.0", mt::plugins::mpi::register_mpi)
