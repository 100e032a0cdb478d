// Registers the "mpi" communicator (the world of an MPI job) into a Registry; the plugin entry
// and the tests that link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::mpi {

void register_mpi(Registry& registry);

}  // namespace mt::plugins::mpi
