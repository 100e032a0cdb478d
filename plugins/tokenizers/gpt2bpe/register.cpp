#include "register.h"

#include <memory>

#include "gpt2bpe_tokenizer.h"

namespace mt::plugins::gpt2bpe {

void register_gpt2bpe(Registry& registry) {
    registry.tokenizers().add("GPT2BPETokenizer", [](const TokenizerOptions& options) {
        require_core_v0_13_classes(options, "GPT2BPETokenizer");
        return std::make_unique<Gpt2BpeTokenizer>(options);
    });
}

}  // namespace mt::plugins::gpt2bpe
