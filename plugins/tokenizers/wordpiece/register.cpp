#include "register.h"

#include <memory>

#include "bert_wordpiece_tokenizer.h"
#include "core_bert_wordpiece_tokenizer.h"
#include "mt/registry.h"

namespace mt::plugins::wordpiece {

void register_wordpiece(Registry& registry) {
    for (const bool lower_case : {true, false})
        registry.tokenizers().add(
            lower_case ? "BertWordPieceLowerCase" : "BertWordPieceCase",
            [lower_case](const TokenizerOptions& o) -> std::unique_ptr<Tokenizer> {
                if (o.classes == TokenizerOptions::Classes::core_v0_19)
                    return std::make_unique<CoreBertWordPieceTokenizer>(o, lower_case);
                return std::make_unique<BertWordPieceTokenizer>(o, lower_case);
            });
}

}  // namespace mt::plugins::wordpiece
