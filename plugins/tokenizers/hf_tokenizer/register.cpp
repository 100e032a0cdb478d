#include "register.h"

#include <memory>

#include "hf_tokenizer.h"

namespace mt::plugins::hf_tokenizer {

void register_hf_tokenizer(Registry& registry) {
    registry.tokenizers().add("HuggingFaceTokenizer", [](const TokenizerOptions& options) {
        require_core_v0_13_classes(options, "HuggingFaceTokenizer");
        return std::make_unique<HfTokenizer>(options);
    });
}

}  // namespace mt::plugins::hf_tokenizer
