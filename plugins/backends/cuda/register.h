// Registers the "cuda" backend.
#pragma once

#include "mt/registry.h"

namespace mt::plugins::cuda {
void register_cuda(Registry& registry);
}
