#include "unicode_classes.h"

#include <algorithm>
#include <array>
#include <map>

namespace mt::plugins::gpt2bpe {

namespace {

struct ClassRange {
    uint32_t first, last;
    CharClass cls;
};

constexpr ClassRange kRanges[] = {
#include "unicode_classes.inc"
};

constexpr uint32_t kCodePoints = 0x110000;

}  // namespace

const UnicodeClasses& UnicodeClasses::get() {
    static const UnicodeClasses classes;
    return classes;
}

UnicodeClasses::UnicodeClasses() : stage1_(kCodePoints >> 8) {
    std::vector<uint8_t> flat(kCodePoints, kOther);
    for (const ClassRange& r : kRanges)
        for (uint32_t cp = r.first; cp <= r.last; ++cp) flat[cp] = r.cls;
    // Most of the 4352 blocks are identical (unassigned planes, CJK letters): share them.
    std::map<std::array<uint8_t, 256>, uint16_t> seen;
    for (uint32_t b = 0; b < stage1_.size(); ++b) {
        std::array<uint8_t, 256> block;
        std::copy_n(flat.begin() + (b << 8), 256, block.begin());
        auto [it, inserted] = seen.try_emplace(block, uint16_t(seen.size()));
        if (inserted) blocks_.insert(blocks_.end(), block.begin(), block.end());
        stage1_[b] = it->second;
    }
}

}  // namespace mt::plugins::gpt2bpe
