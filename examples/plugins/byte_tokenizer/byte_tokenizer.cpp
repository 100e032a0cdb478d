#include "byte_tokenizer.h"

#include <mt/error.h>
#include <mt/registry.h>

#include <memory>

namespace mt_example {

ByteTokenizer::ByteTokenizer() {
    special_.eod = 256;  // the others stay absent: asking for them is an mt::Error
}

void ByteTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    // No state is touched, so concurrent calls from megatron-preprocess's workers are safe.
    for (char c : text) out.push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids) const {
    std::string text;
    text.reserve(ids.size());
    for (int32_t id : ids) {
        MT_CHECK(id >= 0 && id < 256, "ByteTokenizer: id ", id, " is not a byte");
        text.push_back(static_cast<char>(id));
    }
    return text;
}

void register_byte_tokenizer(mt::Registry& registry) {
    // The factory gets Megatron's tokenizer flags (--vocab-file, ...); this tokenizer needs none.
    registry.tokenizers().add("ByteTokenizer", [](const mt::TokenizerOptions&) {
        return std::make_unique<ByteTokenizer>();
    });
}

}  // namespace mt_example
