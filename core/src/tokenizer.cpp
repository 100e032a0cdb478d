#include "mt/tokenizer.h"

#include "mt/error.h"

namespace mt {

void require_core_v0_13_classes(const TokenizerOptions& options, std::string_view type) {
    MT_CHECK(options.classes == TokenizerOptions::Classes::core_v0_13, "--tokenizer-type ", type,
             ": not supported yet: core_v0.19's megatron/core/tokenizers build of it "
             "(--tokenizer-classes core_v0.19, --tokenizer-special-tokens, "
             "--tokenizer-sentencepiece-legacy); core_v0.13's is the default");
}

int32_t Tokenizer::require(const std::optional<int32_t>& id, const char* what) const {
    MT_CHECK(id.has_value(), name(), " has no ", what, " token");
    return *id;
}

TokenizerIdentity Tokenizer::dataset_identity() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: training data read with the ",
            name(), " tokenizer (its dataset cache identity)");
}

std::vector<std::string> Tokenizer::vocabulary() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: the ", name(),
            " tokenizer's vocabulary text (inv_vocab)");
}

}  // namespace mt
