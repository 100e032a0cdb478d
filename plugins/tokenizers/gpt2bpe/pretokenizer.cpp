#include "pretokenizer.h"

#include "mt/error.h"

namespace mt::plugins::gpt2bpe {

void PieceScanner::throw_invalid(const uint8_t* p) const {
    const std::string_view whole(reinterpret_cast<const char*>(begin_), size_t(end_ - begin_));
    MT_FAIL("GPT2BPETokenizer: ", text::invalid_utf8_message(whole, size_t(p - begin_)));
}

}  // namespace mt::plugins::gpt2bpe
