#include "register.h"

#include <memory>

#include "mt/registry.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {

void register_torch(Registry& registry) {
    registry.checkpoints().add("torch", [] { return std::make_unique<TorchCheckpoint>(); });
}

}  // namespace mt::plugins::torch_ckpt
