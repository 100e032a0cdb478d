// Large CPU allocations, recycled: a training step allocates the same activation and gradient
// blocks every iteration, and fresh pages from the kernel cost a page fault and a clear each time
// (13% of a GPT-2 124M step before this cache).
#pragma once

#include <cstdint>

namespace mt::detail {

// Blocks from this size up go through the cache; smaller ones through malloc.
inline constexpr int64_t kCachedBlockMin = int64_t(1) << 20;

// An uninitialised, page-aligned block of at least `bytes` (>= kCachedBlockMin); `capacity`
// receives its real size, which give_block needs back. Null when the system has no memory.
void* take_block(int64_t bytes, int64_t& capacity);
// Returns a block from take_block; it is kept for reuse, or unmapped when the cache is full.
void give_block(void* block, int64_t capacity);
// Unmaps every cached block (memory ran out elsewhere: a smaller allocation failed).
void release_cached_blocks();

// Zero-filled pages straight from the kernel (munmap them), or null when the system has no memory.
// From 2 MiB up they ask for transparent huge pages (Debian's default lends them only on
// request): a first touch then faults once per 2 MiB instead of once per 4 KiB, and streaming
// weights misses the TLB less (bf16 GPT-2 124M's first training step 6.6-6.8 -> 4.2-4.6 s, decode
// a few percent, on Zen 4).
void* map_zeroed_pages(int64_t bytes);

}  // namespace mt::detail
