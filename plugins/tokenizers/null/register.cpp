#include "register.h"

#include <memory>

#include "mt/registry.h"
#include "null_tokenizer.h"

namespace mt::plugins::null {

void register_null(Registry& registry) {
    registry.tokenizers().add("NullTokenizer", [](const TokenizerOptions& o) {
        return std::make_unique<NullTokenizer>(o);
    });
}

}  // namespace mt::plugins::null
