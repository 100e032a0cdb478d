#include "mt/tokenizer.h"

#include "mt/error.h"

namespace mt {

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
