// GPT-2's reversible byte -> character table (bytes_to_unicode() in gpt2_tokenization.py):
// printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100..U+0143.
#pragma once

#include <array>
#include <cstdint>

namespace mt::text {

struct ByteLevel {
    std::array<uint32_t, 256> char_of_byte{};   // byte -> code point
    std::array<int16_t, 0x144> byte_of_char{};  // code point -> byte, -1 where none

    constexpr ByteLevel() {
        for (auto& b : byte_of_char) b = -1;
        uint32_t shifted = 0;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            char_of_byte[b] = printable ? b : 0x100 + shifted++;
            byte_of_char[char_of_byte[b]] = int16_t(b);
        }
    }
    // The byte a code point stands for, or -1 when it is not one of the 256 characters.
    constexpr int byte_of(uint32_t cp) const {
        return cp < byte_of_char.size() ? byte_of_char[cp] : -1;
    }
};

inline constexpr ByteLevel kByteLevel{};

}  // namespace mt::text
