// Registers the Hugging Face tokenizer.json tokenizer under Megatron's --tokenizer-type name,
// HuggingFaceTokenizer (built from --tokenizer-model).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::hf_tokenizer {

void register_hf_tokenizer(Registry& registry);

}  // namespace mt::plugins::hf_tokenizer
