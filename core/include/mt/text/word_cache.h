// A bounded table of piece bytes -> token ids. The tokenizer keeps one read-only table of the
// vocab's own tokens, shared by all threads, and one per thread (and tokenizer) for the other
// pieces it has seen, so repeated words skip BPE without locking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mt/api.h"

namespace mt::text {

class MT_API WordCache {
  public:
    // Pieces longer than this are not kept (rare, and they would crowd out the rest).
    static constexpr size_t kMaxKey = 64;

    // Holds up to max_entries pieces; inserting one more first forgets everything.
    explicit WordCache(size_t max_entries);

    // A serial for a new tokenizer instance (never reused).
    static uint64_t new_owner();
    // The calling thread's cache for the tokenizer with that serial: a thread keeps caches for
    // its last few tokenizers, and as serials are never reused a dead tokenizer's cache is never
    // taken for a new one's. Thread-safe without locks.
    static WordCache& for_thread(uint64_t owner);

    // The ids of the piece, or nullptr. `hash` is hash_piece(bytes, n), n <= kMaxKey.
    const int32_t* find(const uint8_t* bytes, size_t n, uint64_t hash, size_t& count) const {
        const uint64_t prefix = load_prefix(bytes, n);
        for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key_len == 0) return nullptr;
            if (s.tag == uint32_t(hash >> 32) && s.prefix == prefix && s.key_len == n &&
                (n <= 8 || std::memcmp(&tails_[s.tail_at], bytes + 8, n - 8) == 0)) {
                count = s.id_count;
                return s.id_count == 1 ? &s.value : &ids_[s.value];
            }
        }
    }
    // Remembers the ids of a piece (1 <= n <= kMaxKey, 1 <= count).
    void insert(const uint8_t* bytes, size_t n, uint64_t hash, const int32_t* ids, size_t count);

    // Appends the ids of a piece (1 <= n <= kMaxKey): the read-only `known` table's (may be
    // null), else this cache's, else those encode(out) appends, which this cache then keeps.
    template <class Encode>
    void append_ids(const WordCache* known, const uint8_t* bytes, size_t n,
                    std::vector<int32_t>& out, Encode&& encode) {
        const uint64_t hash = hash_piece(bytes, n);
        size_t count = 0;
        const int32_t* ids = known ? known->find(bytes, n, hash, count) : nullptr;
        if (ids == nullptr) ids = find(bytes, n, hash, count);
        if (ids != nullptr) {
            if (count == 1)
                out.push_back(ids[0]);  // the common case; spares a memmove call
            else
                out.insert(out.end(), ids, ids + count);
            return;
        }
        const size_t before = out.size();
        encode(out);
        if (out.size() > before) insert(bytes, n, hash, out.data() + before, out.size() - before);
    }

    static uint64_t hash_piece(const uint8_t* p, size_t n) {
        uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
        while (n >= 8) {
            uint64_t w;
            std::memcpy(&w, p, 8);
            h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
            h ^= h >> 29;
            p += 8;
            n -= 8;
        }
        h = (h ^ load_prefix(p, n)) * 0x94D049BB133111EBull;
        return h ^ (h >> 31);
    }

  private:
    // The first min(n, 8) bytes, zero-padded, without reading past p + n.
    static uint64_t load_prefix(const uint8_t* p, size_t n) {
        uint64_t w = 0;
        if (n >= 8) {
            std::memcpy(&w, p, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            std::memcpy(&a, p, 4);
            std::memcpy(&b, p + n - 4, 4);
            w = uint64_t(a) | (uint64_t(b) << ((n - 4) * 8));
        } else if (n > 0) {
            w = uint64_t(p[0]) | (uint64_t(p[n / 2]) << ((n / 2) * 8)) |
                (uint64_t(p[n - 1]) << ((n - 1) * 8));
        }
        return w;
    }

    struct Slot {
        uint64_t prefix;  // first 8 key bytes; the rest is at tails_[tail_at]
        uint32_t tag;     // high half of the hash (the low bits chose the slot)
        uint32_t tail_at;
        int32_t value;     // the id itself when id_count == 1, else an offset in ids_
        uint16_t key_len;  // 0 marks an empty slot
        uint16_t id_count;
    };

    struct Free {
        void operator()(Slot* p) const { std::free(p); }
    };
    // Zeroed by calloc, so the pages of a large, mostly empty table are only touched when used.
    void allocate_slots();

    std::unique_ptr<Slot[], Free> slots_;
    std::vector<uint8_t> tails_;
    std::vector<int32_t> ids_;
    size_t max_entries_;
    size_t slot_count_;
    size_t entries_ = 0;
    size_t mask_;
};

}  // namespace mt::text
