// The byte-pair merge loop of every BPE tokenizer here (GPT-2, Hugging Face BPE, TikToken):
// ranked merges of adjacent symbol pairs in a flat hash table, run on small integer arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mt/api.h"

namespace mt::text {

class MT_API BpeMerges {
  public:
    // Which pair merges next. Both take the lowest rank; they differ when a merge makes a new
    // pair that is ranked below pairs already waiting (ranks need not grow along merges).
    enum class Order {
        // The leftmost lowest-ranked pair, then look again (tokenizers' Word::merge_all,
        // tiktoken's byte_pair_merge).
        kLowestFirst,
        // Every occurrence of the lowest-ranked pair, left to right, before looking again
        // (Megatron's GPT2Tokenizer.bpe()).
        kPassPerRank,
    };

    struct Merge {
        uint32_t left, right;  // the adjacent symbols
        uint32_t rank;         // lower merges first
        uint32_t result;       // the symbol they become
    };

    // A pair listed twice keeps its last entry, as a Python dict or Rust HashMap built from the
    // list does.
    BpeMerges(std::span<const Merge> merges, Order order);

    // Merges syms[0, n) in place and returns the new count.
    size_t merge(uint32_t* syms, size_t n) const {
        return n <= kShortWord ? merge_short(syms, n) : merge_long(syms, n);
    }

    // The two implementations merge() picks from, public for tests: merge_short works on stack
    // arrays (n <= kShortWord, O(n * merges)); merge_long keeps a heap of candidate pairs (any
    // n, O(n log n)). Both give equal results.
    static constexpr size_t kShortWord = 128;
    size_t merge_short(uint32_t* syms, size_t n) const;
    size_t merge_long(uint32_t* syms, size_t n) const;

    struct Slot {
        uint64_t key;  // left << 32 | right; kEmptyKey marks a free slot
        uint32_t rank, result;
    };
    static constexpr uint64_t kEmptyKey = UINT64_MAX;

    // The slot of (left, right), or nullptr when they do not merge.
    const Slot* find(uint32_t left, uint32_t right) const {
        const uint64_t key = (uint64_t(left) << 32) | right;
        for (size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);; i = (i + 1) & mask_) {
            const Slot& s = table_[i];
            if (s.key == key) return &s;
            if (s.key == kEmptyKey) return nullptr;
        }
    }
    // Every slot, free ones included (their key is kEmptyKey).
    std::span<const Slot> slots() const { return table_; }

  private:
    Order order_;
    std::vector<Slot> table_;
    size_t mask_ = 0;
    int shift_ = 64;
};

}  // namespace mt::text
