#include "register.h"

#include <memory>

#include "meta_checkpoint.h"
#include "mt/registry.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {

void register_torch(Registry& registry) {
    registry.checkpoints().add("torch", [] { return std::make_unique<TorchCheckpoint>(); });
    registry.checkpoints().add("llama_meta", [] { return std::make_unique<MetaCheckpoint>(); });
}

}  // namespace mt::plugins::torch_ckpt
