#include "register.h"

#include <memory>

#include "core_gpt2bpe_tokenizer.h"
#include "gpt2bpe_tokenizer.h"

namespace mt::plugins::gpt2bpe {

void register_gpt2bpe(Registry& registry) {
    registry.tokenizers().add("GPT2BPETokenizer",
                              [](const TokenizerOptions& options) -> std::unique_ptr<Tokenizer> {
                                  if (options.classes == TokenizerOptions::Classes::core_v0_19)
                                      return std::make_unique<CoreGpt2BpeTokenizer>(options);
                                  return std::make_unique<Gpt2BpeTokenizer>(options);
                              });
}

}  // namespace mt::plugins::gpt2bpe
