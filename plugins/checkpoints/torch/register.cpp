#include "register.h"

#include <memory>

#include "deepspeed_checkpoint.h"
#include "meta_checkpoint.h"
#include "mt/registry.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {

void register_torch(Registry& registry) {
    registry.checkpoints().add("torch", [] { return std::make_unique<TorchCheckpoint>(); });
    registry.checkpoints().add("llama_meta", [] { return std::make_unique<MetaCheckpoint>(); });
    registry.checkpoints().add("deepspeed", [] { return std::make_unique<DeepSpeedCheckpoint>(); });
}

}  // namespace mt::plugins::torch_ckpt
