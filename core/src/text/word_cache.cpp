#include "mt/text/word_cache.h"

#include <array>
#include <atomic>
#include <bit>
#include <new>
#include <type_traits>

namespace mt::text {

WordCache::WordCache(size_t max_entries)
    : max_entries_(max_entries),
      slot_count_(std::bit_ceil(2 * max_entries + 2)),
      mask_(slot_count_ - 1) {
    allocate_slots();
}

void WordCache::allocate_slots() {
    static_assert(std::is_trivially_copyable_v<Slot>);
    slots_.reset(static_cast<Slot*>(std::calloc(slot_count_, sizeof(Slot))));
    if (!slots_) throw std::bad_alloc();
}

void WordCache::insert(const uint8_t* bytes, size_t n, uint64_t hash, const int32_t* ids,
                       size_t count) {
    if (entries_ >= max_entries_) {
        // Dropping everything keeps the bound trivially and costs one refill of common words.
        slots_.reset();
        allocate_slots();
        tails_.clear();
        ids_.clear();
        entries_ = 0;
    }
    size_t i = hash & mask_;
    while (slots_[i].key_len != 0) i = (i + 1) & mask_;
    Slot& s = slots_[i];
    s = Slot{load_prefix(bytes, n), uint32_t(hash >> 32), uint32_t(tails_.size()), ids[0],
             uint16_t(n),           uint16_t(count)};
    if (n > 8) tails_.insert(tails_.end(), bytes + 8, bytes + n);
    if (count > 1) {
        s.value = int32_t(ids_.size());
        ids_.insert(ids_.end(), ids, ids + count);
    }
    ++entries_;
}

namespace {
// Pieces each thread remembers per tokenizer (about 7 MiB); text beyond that many distinct
// multi-token words starts the cache over.
constexpr size_t kThreadCacheEntries = 120000;
}  // namespace

uint64_t WordCache::new_owner() {
    static std::atomic<uint64_t> counter{0};
    return ++counter;
}

WordCache& WordCache::for_thread(uint64_t owner) {
    struct Entry {
        uint64_t owner = 0;
        std::unique_ptr<WordCache> cache;
    };
    thread_local std::array<Entry, 4> entries;
    thread_local size_t next_victim = 0;
    for (Entry& e : entries)
        if (e.cache && e.owner == owner) return *e.cache;
    Entry& e = entries[next_victim++ % entries.size()];
    e.owner = owner;
    e.cache = std::make_unique<WordCache>(kThreadCacheEntries);
    return *e.cache;
}

}  // namespace mt::text
