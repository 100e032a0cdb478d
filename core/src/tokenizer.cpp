#include "mt/tokenizer.h"

#include "mt/error.h"

namespace mt {

int32_t Tokenizer::require(const std::optional<int32_t>& id, const char* what) const {
    MT_CHECK(id.has_value(), name(), " has no ", what, " token");
    return *id;
}

}  // namespace mt
