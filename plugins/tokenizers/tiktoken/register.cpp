#include "register.h"

#include <memory>

#include "tiktoken_tokenizer.h"

namespace mt::plugins::tiktoken {

void register_tiktoken(Registry& registry) {
    registry.tokenizers().add("TikTokenizer", [](const TokenizerOptions& options) {
        return std::make_unique<TikTokenizer>(options);
    });
}

}  // namespace mt::plugins::tiktoken
