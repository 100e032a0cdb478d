// Registers the GPT-2 byte-level BPE tokenizer under Megatron's --tokenizer-type name,
// GPT2BPETokenizer (built from --vocab-file and --merge-file).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::gpt2bpe {

void register_gpt2bpe(Registry& registry);

}  // namespace mt::plugins::gpt2bpe
