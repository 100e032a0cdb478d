// The BPE merge engine against direct transcriptions of the two merge orders it implements
// (tokenizers' and tiktoken's one pair at a time, Megatron GPT-2's one rank per pass), on
// random merge tables whose ranks need not grow along merges, short and long words alike.
#include "mt/text/bpe_merges.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace mt::text {
namespace {

using Order = BpeMerges::Order;
using Table = std::map<std::pair<uint32_t, uint32_t>, BpeMerges::Merge>;

// The merge loops on plain vectors: find the lowest rank (leftmost on ties), then merge that one
// pair (kLowestFirst) or every occurrence of it left to right (kPassPerRank).
std::vector<uint32_t> oracle(std::vector<uint32_t> syms, const Table& table, Order order) {
    for (;;) {
        const BpeMerges::Merge* best = nullptr;
        size_t at = 0;
        for (size_t i = 0; i + 1 < syms.size(); ++i) {
            auto it = table.find({syms[i], syms[i + 1]});
            if (it != table.end() && (!best || it->second.rank < best->rank)) {
                best = &it->second;
                at = i;
            }
        }
        if (!best) return syms;
        std::vector<uint32_t> out(syms.begin(), syms.begin() + at);
        bool merging = true;
        for (size_t i = at; i < syms.size();) {
            if (merging && i + 1 < syms.size() && syms[i] == best->left &&
                syms[i + 1] == best->right) {
                out.push_back(best->result);
                merging = order == Order::kPassPerRank;
                i += 2;
            } else {
                out.push_back(syms[i++]);
            }
        }
        syms = std::move(out);
    }
}

// Merges over symbols 0..3 making new symbols from 4 on; ranks shuffled, a few pairs listed
// twice (the last entry counts), and with `shared_ranks` several pairs per rank, as tiktoken's
// ranks (of the merged bytes) give them.
std::vector<BpeMerges::Merge> random_merges(std::mt19937& rng, size_t count, bool shared_ranks) {
    std::vector<BpeMerges::Merge> merges;
    uint32_t next = 4;
    for (size_t i = 0; i < count; ++i)
        merges.push_back({uint32_t(rng() % next), uint32_t(rng() % next), 0, next++});
    std::vector<uint32_t> ranks(merges.size());
    for (size_t i = 0; i < ranks.size(); ++i)
        ranks[i] = shared_ranks ? uint32_t(i / 3) : uint32_t(i);
    std::shuffle(ranks.begin(), ranks.end(), rng);
    for (size_t i = 0; i < merges.size(); ++i) merges[i].rank = ranks[i];
    for (size_t i = 0; i < count / 10; ++i) {
        BpeMerges::Merge again = merges[rng() % merges.size()];
        again.rank = shared_ranks ? uint32_t(rng() % count) : uint32_t(count + i);
        merges.push_back(again);
    }
    return merges;
}

void check_orders(bool shared_ranks) {
    std::mt19937 rng(shared_ranks ? 77 : 1234);
    for (Order order : {Order::kLowestFirst, Order::kPassPerRank}) {
        // One pair per rank for kPassPerRank: its passes merge "the" pair of the lowest rank.
        if (shared_ranks && order == Order::kPassPerRank) continue;
        for (int t = 0; t < 40; ++t) {
            const auto merges = random_merges(rng, 5 + rng() % 60, shared_ranks);
            Table table;
            for (const auto& m : merges) table[{m.left, m.right}] = m;
            const BpeMerges engine(merges, order);
            for (int w = 0; w < 60; ++w) {
                const size_t len = 1 + rng() % (w % 10 == 0 ? 600 : BpeMerges::kShortWord);
                std::vector<uint32_t> word(len);
                for (auto& s : word) s = rng() % (w % 2 ? 2 : 4);
                const auto expected = oracle(word, table, order);
                std::vector<uint32_t> got = word;
                got.resize(engine.merge_long(got.data(), got.size()));
                ASSERT_EQ(got, expected) << "table " << t << " word " << w << " (long)";
                if (len > BpeMerges::kShortWord) continue;
                got = word;
                got.resize(engine.merge_short(got.data(), got.size()));
                ASSERT_EQ(got, expected) << "table " << t << " word " << w << " (short)";
            }
        }
    }
}

TEST(BpeMerges, BothOrdersAgreeWithTheirOracles) {
    check_orders(false);
}

TEST(BpeMerges, PairsSharingARankMergeLeftmostFirst) {
    check_orders(true);
}

TEST(BpeMerges, TheOrdersDifferWhenANewPairRanksLower) {
    // a=0 b=1 ab=2 aba=3: "ab a" is ranked above "a b". One pass of "a b" over "abab" gives
    // "ab ab" (Megatron's GPT-2); one pair at a time, "ab a" forms first (tokenizers, tiktoken).
    const std::vector<BpeMerges::Merge> merges = {{2, 0, 0, 3}, {0, 1, 1, 2}};
    std::vector<uint32_t> abab = {0, 1, 0, 1};
    std::vector<uint32_t> syms = abab;
    syms.resize(BpeMerges(merges, Order::kPassPerRank).merge(syms.data(), syms.size()));
    EXPECT_EQ(syms, (std::vector<uint32_t>{2, 2}));
    syms = abab;
    syms.resize(BpeMerges(merges, Order::kLowestFirst).merge(syms.data(), syms.size()));
    EXPECT_EQ(syms, (std::vector<uint32_t>{3, 1}));
}

TEST(BpeMerges, ARepeatedPairKeepsItsLastEntry) {
    const std::vector<BpeMerges::Merge> merges = {{0, 1, 5, 7}, {1, 2, 6, 8}, {0, 1, 9, 10}};
    const BpeMerges engine(merges, Order::kLowestFirst);
    ASSERT_NE(engine.find(0, 1), nullptr);
    EXPECT_EQ(engine.find(0, 1)->rank, 9u);
    EXPECT_EQ(engine.find(0, 1)->result, 10u);
    EXPECT_EQ(engine.find(1, 0), nullptr);
    std::vector<uint32_t> syms = {0, 1, 2};
    syms.resize(engine.merge(syms.data(), syms.size()));
    EXPECT_EQ(syms, (std::vector<uint32_t>{0, 8}));  // "1 2" (rank 6) before "0 1" (rank 9)
}

}  // namespace
}  // namespace mt::text
