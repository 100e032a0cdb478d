// GPT-2's byte-level BPE merge loop over interned symbols: merges.txt ranks in a flat hash
// table keyed by the symbol pair, and Megatron's GPT2Tokenizer.bpe() run on small arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpe_files.h"

namespace mt::plugins::gpt2bpe {

class BpeModel {
  public:
    // Symbols 0..255 are the 256 one-byte characters; every string named by a merge (its two
    // parts and their concatenation) gets a symbol too, whether or not the vocab has it.
    BpeModel(const std::vector<VocabEntry>& vocab, const std::vector<MergeRule>& merges);

    // Appends the ids of one pre-tokenised piece given as its UTF-8 bytes. A merged string the
    // vocab lacks becomes id 0, as Megatron's encoder.get(token, 0) does.
    void encode_piece(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const;

    // The merge loop: repeatedly takes the lowest-ranked adjacent pair and merges all its
    // occurrences left to right. Rewrites syms in place and returns the new count.
    // merge_short works on stack arrays (n <= kShortWord, O(n * merges));
    // merge_long keeps a heap of candidate pairs (any n, O(n log n)). Both give equal results.
    static constexpr size_t kShortWord = 128;
    size_t merge_short(uint32_t* syms, size_t n) const;
    size_t merge_long(uint32_t* syms, size_t n) const;

    int32_t symbol_id(uint32_t sym) const { return symbol_id_[sym]; }
    size_t symbol_count() const { return symbol_id_.size(); }

  private:
    static constexpr uint32_t kNoRank = UINT32_MAX;
    static constexpr uint64_t kEmptyKey = UINT64_MAX;
    struct Slot {
        uint64_t key;     // left << 32 | right
        uint32_t rank;    // line index in merges.txt (a repeated pair keeps its last line)
        uint32_t result;  // symbol of left + right
    };

    const Slot* find(uint32_t left, uint32_t right) const {
        const uint64_t key = (uint64_t(left) << 32) | right;
        size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
        for (;;) {
            const Slot& s = table_[i];
            if (s.key == key) return &s;
            if (s.key == kEmptyKey) return nullptr;
            i = (i + 1) & mask_;
        }
    }

    std::vector<Slot> table_;
    size_t mask_ = 0;
    int shift_ = 64;
    std::vector<int32_t> symbol_id_;  // symbol -> vocab id
};

}  // namespace mt::plugins::gpt2bpe
