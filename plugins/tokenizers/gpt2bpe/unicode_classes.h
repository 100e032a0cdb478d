// The four character classes of GPT-2's pre-tokenisation regex (\s, \p{L}, \p{N}, other), by
// code point, exactly as Python's `regex` module answers them (see gen_unicode_classes.py).
#pragma once

#include <cstdint>
#include <vector>

namespace mt::plugins::gpt2bpe {

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// A two-stage table (block of 256 code points -> shared 256-entry class block), built once
// from the generated ranges; lookups are two loads, the first block serves ASCII directly.
class UnicodeClasses {
  public:
    static const UnicodeClasses& get();

    // cp must be <= 0x10FFFF.
    CharClass of(uint32_t cp) const {
        return CharClass(blocks_[(uint32_t(stage1_[cp >> 8]) << 8) | (cp & 0xFF)]);
    }
    // Classes of U+0000..U+00FF, for the ASCII fast path.
    const uint8_t* latin1() const { return blocks_.data() + (uint32_t(stage1_[0]) << 8); }

  private:
    UnicodeClasses();
    std::vector<uint16_t> stage1_;  // 0x1100 entries: block index per 256 code points
    std::vector<uint8_t> blocks_;   // unique blocks of 256 classes
};

}  // namespace mt::plugins::gpt2bpe
