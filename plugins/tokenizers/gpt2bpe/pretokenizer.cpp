#include "pretokenizer.h"

#include <cstdio>
#include <string>

#include "mt/error.h"

namespace mt::plugins::gpt2bpe {

void PieceScanner::throw_invalid(const uint8_t* p) const {
    std::string bytes;
    for (const uint8_t* q = p; q < end_ && q < p + 4; ++q) {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%02X", *q);
        bytes += (bytes.empty() ? "" : " ") + std::string(hex);
    }
    MT_FAIL("GPT2BPETokenizer: text is not valid UTF-8 at byte ", p - begin_, " (bytes ", bytes,
            ")");
}

}  // namespace mt::plugins::gpt2bpe
