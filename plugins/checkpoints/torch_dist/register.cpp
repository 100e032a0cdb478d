#include "register.h"

#include <memory>

#include "mt/registry.h"
#include "torch_dist_checkpoint.h"

namespace mt::plugins::torch_dist {

void register_torch_dist(Registry& registry) {
    registry.checkpoints().add("torch_dist",
                               [] { return std::make_unique<TorchDistCheckpoint>(); });
}

}  // namespace mt::plugins::torch_dist
