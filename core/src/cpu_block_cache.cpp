// The cache behind take_block/give_block: freed blocks wait in size classes (an eighth of a power
// of two apart) for the next request of their class, up to a quarter of the machine's memory;
// when memory runs out, they go before a request fails.
#include "cpu_block_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace mt::detail {

namespace {

// The size class of a request: rounded up to an eighth of its power of two (pages at least).
int64_t capacity_of(int64_t bytes) {
    int64_t power = 1;
    while (power * 2 <= bytes) power *= 2;
    const int64_t step = std::max<int64_t>(power / 8, 4096);
    return (bytes + step - 1) / step * step;
}

class BlockCache {
  public:
    BlockCache() {
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        limit_ = pages > 0 && page > 0 ? int64_t(pages) * page / 4 : int64_t(1) << 30;
    }
    void* take(int64_t capacity) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = free_.find(capacity);
            if (it != free_.end()) {
                void* block = it->second;
                free_.erase(it);
                cached_ -= capacity;
                return block;
            }
        }
        void* p = map_zeroed_pages(capacity);
        if (!p) {  // out of memory (or of a ulimit): the cached blocks go, then once more
            release_cached();
            p = map_zeroed_pages(capacity);
        }
        return p;
    }
    void give(void* block, int64_t capacity) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (cached_ + capacity <= limit_) {
                free_.emplace(capacity, block);
                cached_ += capacity;
                return;
            }
        }
        ::munmap(block, size_t(capacity));
    }

    void release_cached() {
        std::multimap<int64_t, void*> blocks;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            blocks.swap(free_);
            cached_ = 0;
        }
        for (const auto& [capacity, block] : blocks) ::munmap(block, size_t(capacity));
    }

  private:
    std::mutex mutex_;
    std::multimap<int64_t, void*> free_;
    int64_t cached_ = 0, limit_ = 0;
};

// Never destroyed: tensors freed during static destruction still return their blocks.
BlockCache& cache() {
    static BlockCache* instance = new BlockCache();
    return *instance;
}

}  // namespace

void* map_zeroed_pages(int64_t bytes) {
    void* p =
        ::mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (bytes >= (int64_t(2) << 20)) ::madvise(p, size_t(bytes), MADV_HUGEPAGE);
    return p;
}

void* take_block(int64_t bytes, int64_t& capacity) {
    capacity = capacity_of(bytes);
    return cache().take(capacity);
}

void give_block(void* block, int64_t capacity) {
    cache().give(block, capacity);
}

void release_cached_blocks() {
    cache().release_cached();
}

}  // namespace mt::detail
