#include "register.h"

#include <memory>

#include "bert_wordpiece_tokenizer.h"
#include "mt/registry.h"

namespace mt::plugins::wordpiece {

void register_wordpiece(Registry& registry) {
    registry.tokenizers().add("BertWordPieceLowerCase", [](const TokenizerOptions& o) {
        require_core_v0_13_classes(o, "BertWordPieceLowerCase");
        return std::make_unique<BertWordPieceTokenizer>(o, /*lower_case=*/true);
    });
    registry.tokenizers().add("BertWordPieceCase", [](const TokenizerOptions& o) {
        require_core_v0_13_classes(o, "BertWordPieceCase");
        return std::make_unique<BertWordPieceTokenizer>(o, /*lower_case=*/false);
    });
}

}  // namespace mt::plugins::wordpiece
