#include "mt/text/bpe_merges.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace mt::text {

namespace {
constexpr uint32_t kNoRank = UINT32_MAX;
}  // namespace

BpeMerges::BpeMerges(std::span<const Merge> merges, Order order) : order_(order) {
    const size_t capacity = std::max<size_t>(16, std::bit_ceil(merges.size() * 2 + 1));
    table_.assign(capacity, Slot{kEmptyKey, kNoRank, 0});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    for (const Merge& m : merges) {
        const uint64_t key = (uint64_t(m.left) << 32) | m.right;
        size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
        while (table_[i].key != kEmptyKey && table_[i].key != key) i = (i + 1) & mask_;
        table_[i] = Slot{key, m.rank, m.result};
    }
}

size_t BpeMerges::merge_short(uint32_t* sym, size_t n) const {
    uint32_t rank[kShortWord];
    uint32_t result[kShortWord];
    bool fresh[kShortWord];  // symbol made by the last step: its pairs need a new lookup
    auto look_up = [&](size_t i) {
        const Slot* s = find(sym[i], sym[i + 1]);
        rank[i] = s ? s->rank : kNoRank;
        result[i] = s ? s->result : 0;
    };
    if (n == 0) return 0;
    for (size_t i = 0; i + 1 < n; ++i) look_up(i);
    rank[n - 1] = kNoRank;  // no pair starts at the last symbol; keeps every copied value defined
    result[n - 1] = 0;
    const bool every_occurrence = order_ == Order::kPassPerRank;
    while (n > 1) {
        uint32_t best = kNoRank;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; ++i) {
            if (rank[i] < best) {
                best = rank[i];
                at = i;
            }
        }
        if (best == kNoRank) break;
        // One pass, left to right, merging the leftmost occurrence of the best pair (and with
        // kPassPerRank every later one: there a rank names one pair); nothing before it
        // changes. Writes trail reads (j <= i), so it runs in place.
        const uint32_t merged = result[at];
        bool merging = true;
        size_t i = at, j = at;
        while (i < n) {
            if (merging && i + 1 < n && rank[i] == best) {
                sym[j] = merged;
                fresh[j] = true;
                merging = every_occurrence;
                i += 2;
            } else {
                sym[j] = sym[i];
                rank[j] = rank[i];
                result[j] = result[i];
                fresh[j] = false;
                i += 1;
            }
            ++j;
        }
        n = j;
        size_t k = at;
        if (k > 0) {
            --k;
            fresh[k] = false;
        }
        for (; k + 1 < n; ++k)
            if (fresh[k] || fresh[k + 1]) look_up(k);
    }
    return n;
}

size_t BpeMerges::merge_long(uint32_t* sym, size_t n) const {
    if (n < 2) return n;
    constexpr uint32_t kNone = UINT32_MAX;
    std::vector<uint32_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = i == 0 ? kNone : uint32_t(i - 1);
        next[i] = i + 1 == n ? kNone : uint32_t(i + 1);
    }
    // Min-heap of (rank << 32 | position): equal ranks come out left to right.
    std::vector<uint64_t> heap;
    auto push = [&](uint32_t i) {
        if (next[i] == kNone) return;
        if (const Slot* s = find(sym[i], sym[next[i]])) {
            heap.push_back((uint64_t(s->rank) << 32) | i);
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
    };
    for (size_t i = 0; i + 1 < n; ++i) push(uint32_t(i));

    const bool every_occurrence = order_ == Order::kPassPerRank;
    std::vector<uint32_t> batch, merged;
    while (!heap.empty()) {
        // kPassPerRank takes every candidate of the lowest rank before merging any, so pairs
        // formed by this pass wait for the next one; kLowestFirst takes one.
        const uint32_t best = uint32_t(heap.front() >> 32);
        batch.clear();
        do {
            batch.push_back(uint32_t(heap.front()));
            std::pop_heap(heap.begin(), heap.end(), std::greater<>());
            heap.pop_back();
        } while (every_occurrence && !heap.empty() && uint32_t(heap.front() >> 32) == best);
        merged.clear();
        for (uint32_t i : batch) {
            // Stale candidates: a node eaten by a merge on its left, or a pair that changed to
            // one of another rank (a pair of the same rank may merge in its place).
            if (!alive[i] || next[i] == kNone) continue;
            const Slot* s = find(sym[i], sym[next[i]]);
            if (s == nullptr || s->rank != best) continue;
            const uint32_t j = next[i];
            sym[i] = s->result;
            alive[j] = false;
            next[i] = next[j];
            if (next[j] != kNone) prev[next[j]] = i;
            merged.push_back(i);
        }
        for (uint32_t i : merged) {
            if (prev[i] != kNone) push(prev[i]);
            push(i);
        }
    }
    size_t m = 0;
    for (uint32_t i = 0; i != kNone; i = next[i]) sym[m++] = sym[i];  // node 0 never dies
    return m;
}

}  // namespace mt::text
