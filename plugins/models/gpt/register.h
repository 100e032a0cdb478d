// Registers the "gpt" model family (Megatron-core's GPTModel).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::gpt {
void register_gpt(Registry& registry);
}
