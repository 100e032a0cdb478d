#include "bpe_model.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "byte_level.h"
#include "utf8.h"

namespace mt::plugins::gpt2bpe {

BpeModel::BpeModel(const std::vector<VocabEntry>& vocab, const std::vector<MergeRule>& merges) {
    std::unordered_map<std::string, uint32_t> symbols;
    std::vector<const std::string*> names;
    auto intern = [&](std::string s) {
        auto [it, inserted] = symbols.try_emplace(std::move(s), uint32_t(names.size()));
        if (inserted) names.push_back(&it->first);
        return it->second;
    };
    for (uint32_t b = 0; b < 256; ++b) {
        std::string s;
        append_utf8(s, kByteLevel.char_of_byte[b]);
        intern(std::move(s));
    }

    struct Pair {
        uint64_t key;
        uint32_t rank, result;
    };
    std::vector<Pair> pairs;
    pairs.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const MergeRule& m = merges[rank];
        const uint32_t left = intern(m.left);
        const uint32_t right = intern(m.right);
        const uint32_t result = intern(m.left + m.right);
        pairs.push_back({(uint64_t(left) << 32) | right, uint32_t(rank), result});
    }

    const size_t capacity = std::max<size_t>(16, std::bit_ceil(pairs.size() * 2 + 1));
    table_.assign(capacity, Slot{kEmptyKey, kNoRank, 0});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    for (const Pair& p : pairs) {
        size_t i = size_t((p.key * 0x9E3779B97F4A7C15ull) >> shift_);
        while (table_[i].key != kEmptyKey && table_[i].key != p.key) i = (i + 1) & mask_;
        // A pair listed twice keeps its last rank, as dict(zip(merges, ranks)) does.
        table_[i] = Slot{p.key, p.rank, p.result};
    }

    std::unordered_map<std::string_view, int32_t> ids;
    for (const VocabEntry& e : vocab) ids.insert_or_assign(std::string_view(e.token), e.id);
    symbol_id_.resize(names.size());
    for (size_t s = 0; s < names.size(); ++s) {
        auto it = ids.find(*names[s]);
        symbol_id_[s] = it == ids.end() ? 0 : it->second;
    }
}

void BpeModel::encode_piece(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const {
    if (n <= kShortWord) {
        uint32_t syms[kShortWord];
        for (size_t i = 0; i < n; ++i) syms[i] = bytes[i];
        const size_t m = merge_short(syms, n);
        for (size_t i = 0; i < m; ++i) out.push_back(symbol_id_[syms[i]]);
    } else {
        std::vector<uint32_t> syms(bytes, bytes + n);
        const size_t m = merge_long(syms.data(), n);
        for (size_t i = 0; i < m; ++i) out.push_back(symbol_id_[syms[i]]);
    }
}

size_t BpeModel::merge_short(uint32_t* sym, size_t n) const {
    uint32_t rank[kShortWord];
    uint32_t result[kShortWord];
    bool fresh[kShortWord];  // symbol made by the last pass: its pairs need a new lookup
    auto look_up = [&](size_t i) {
        const Slot* s = find(sym[i], sym[i + 1]);
        rank[i] = s ? s->rank : kNoRank;
        result[i] = s ? s->result : 0;
    };
    if (n == 0) return 0;
    for (size_t i = 0; i + 1 < n; ++i) look_up(i);
    rank[n - 1] = kNoRank;  // no pair starts at the last symbol; keeps every copied value defined
    result[n - 1] = 0;
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
        // One pass, left to right, merging every occurrence of the best pair; nothing before
        // its first occurrence changes. Writes trail reads (j <= i), so it runs in place.
        const uint32_t merged = result[at];
        size_t i = at, j = at;
        while (i < n) {
            if (i + 1 < n && rank[i] == best) {
                sym[j] = merged;
                fresh[j] = true;
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

size_t BpeModel::merge_long(uint32_t* sym, size_t n) const {
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

    std::vector<uint32_t> batch, merged;
    while (!heap.empty()) {
        // Take every candidate of the lowest rank before merging any, so pairs formed by this
        // pass wait for the next one, as in Megatron's loop (ranks need not grow along merges).
        const uint32_t best = uint32_t(heap.front() >> 32);
        batch.clear();
        while (!heap.empty() && uint32_t(heap.front() >> 32) == best) {
            batch.push_back(uint32_t(heap.front()));
            std::pop_heap(heap.begin(), heap.end(), std::greater<>());
            heap.pop_back();
        }
        merged.clear();
        for (uint32_t i : batch) {
            // Stale candidates: a node eaten by a merge on its left, or a pair that changed
            // (the rank names the pair, so an equal rank means the same two symbols).
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

}  // namespace mt::plugins::gpt2bpe
