// Registers the "nccl" communicator (the world of an MPI job of GPU ranks) into a Registry;
// the plugin entry and the tests that link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::nccl {

void register_nccl(Registry& registry);

}  // namespace mt::plugins::nccl
