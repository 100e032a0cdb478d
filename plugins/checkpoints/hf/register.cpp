#include "register.h"

#include <memory>

#include "hf_checkpoint.h"
#include "mt/registry.h"

namespace mt::plugins::hf {

void register_hf(Registry& registry) {
    registry.checkpoints().add("hf", [] { return std::make_unique<HfCheckpoint>(); });
}

}  // namespace mt::plugins::hf
