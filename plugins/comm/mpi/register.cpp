#include "register.h"

#include "mpi_communicator.h"
#include "mt/registry.h"

namespace mt::plugins::mpi {

void register_mpi(Registry& registry) {
    registry.communicators().add("mpi", [] { return make_mpi_world(); });
}

}  // namespace mt::plugins::mpi
