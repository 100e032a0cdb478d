// Registers the "t5" model family (Megatron-core's T5Model: encoder, decoder with
// cross-attention, the LM head tied to the word embeddings).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::t5 {
void register_t5(Registry& registry);
}
