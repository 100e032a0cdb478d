#include "register.h"

#include "mt/registry.h"
#include "nccl_communicator.h"

namespace mt::plugins::nccl {

void register_nccl(Registry& registry) {
    // The bootstrap comes from the same registry, so MPI has one owner (the mpi plugin) in the
    // process whichever communicators are made.
    registry.communicators().add(
        "nccl", [&registry] { return make_nccl_world(registry.create_communicator("mpi")); });
}

}  // namespace mt::plugins::nccl
