// Registers the "gpt" model family (Megatron-core's GPTModel) and the Mamba hybrid one
// ("mamba", and "hybrid" as core_v0.19 names it: Megatron-core's MambaModel).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::gpt {
void register_gpt(Registry& registry);
}
