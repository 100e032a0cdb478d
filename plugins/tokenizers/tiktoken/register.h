// Registers Megatron's TikToken tokenizer under its --tokenizer-type name, TikTokenizer (built
// from --tokenizer-model, --tiktoken-pattern, --tiktoken-num-special-tokens,
// --tiktoken-special-tokens and --vocab-size).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::tiktoken {

void register_tiktoken(Registry& registry);

}  // namespace mt::plugins::tiktoken
