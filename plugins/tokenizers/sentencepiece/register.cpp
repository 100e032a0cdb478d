#include "register.h"

#include <memory>

#include "core_sentencepiece_tokenizer.h"
#include "mt/registry.h"
#include "sentencepiece_tokenizer.h"

namespace mt::plugins::sentencepiece {

void register_sentencepiece(Registry& registry) {
    for (const SentencePieceFlavor flavor : {SentencePieceFlavor::sentencepiece,
                                             SentencePieceFlavor::gpt, SentencePieceFlavor::llama2})
        registry.tokenizers().add(
            std::string(flavor_name(flavor)),
            [flavor](const TokenizerOptions& o) -> std::unique_ptr<Tokenizer> {
                if (o.classes == TokenizerOptions::Classes::core_v0_19)
                    return std::make_unique<CoreSentencePieceTokenizer>(o, flavor);
                return std::make_unique<SentencePieceTokenizer>(o, flavor);
            });
}

}  // namespace mt::plugins::sentencepiece
