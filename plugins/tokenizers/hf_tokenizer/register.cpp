#include "register.h"

#include <memory>

#include "core_hf_tokenizer.h"
#include "hf_tokenizer.h"

namespace mt::plugins::hf_tokenizer {

void register_hf_tokenizer(Registry& registry) {
    registry.tokenizers().add("HuggingFaceTokenizer",
                              [](const TokenizerOptions& options) -> std::unique_ptr<Tokenizer> {
                                  if (options.classes == TokenizerOptions::Classes::core_v0_19)
                                      return std::make_unique<CoreHfTokenizer>(options);
                                  return std::make_unique<HfTokenizer>(options);
                              });
}

}  // namespace mt::plugins::hf_tokenizer
