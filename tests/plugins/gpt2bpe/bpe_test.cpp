// GPT-2's BPE through the shared merge engine: both implementations (short words on the stack,
// long words with a heap) against a direct string-based transcription of Megatron's bpe(), on
// random merge tables whose ranks need not grow along merges, and random words.
#include "bpe_model.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"

namespace mt::plugins::gpt2bpe {
namespace {

std::string byte_char(uint8_t b) {
    std::string s;
    text::append_utf8(s, text::kByteLevel.char_of_byte[b]);
    return s;
}

// Megatron's loop on strings: take the lowest-ranked adjacent pair, merge all of its
// occurrences left to right, repeat until no adjacent pair has a rank.
std::vector<std::string> oracle(
    const std::string& word, const std::map<std::pair<std::string, std::string>, size_t>& ranks) {
    std::vector<std::string> symbols;
    for (unsigned char c : word) symbols.push_back(byte_char(c));
    while (symbols.size() > 1) {
        const std::pair<std::string, std::string>* best = nullptr;
        size_t best_rank = SIZE_MAX;
        for (size_t i = 0; i + 1 < symbols.size(); ++i) {
            auto it = ranks.find({symbols[i], symbols[i + 1]});
            if (it != ranks.end() && it->second < best_rank) {
                best_rank = it->second;
                best = &it->first;
            }
        }
        if (best == nullptr) break;
        const std::pair<std::string, std::string> pair = *best;
        std::vector<std::string> merged;
        for (size_t i = 0; i < symbols.size();) {
            if (i + 1 < symbols.size() && symbols[i] == pair.first &&
                symbols[i + 1] == pair.second) {
                merged.push_back(pair.first + pair.second);
                i += 2;
            } else {
                merged.push_back(symbols[i++]);
            }
        }
        symbols = std::move(merged);
    }
    return symbols;
}

struct RandomTable {
    std::vector<MergeRule> merges;
    std::map<std::pair<std::string, std::string>, size_t> ranks;  // last rank of each pair
    std::vector<VocabEntry> vocab;
};

// Merges over the letters a..d, built from symbols that exist so far, then shuffled so ranks
// do not follow the build order; a few pairs appear twice.
RandomTable random_table(std::mt19937& rng, size_t count) {
    RandomTable t;
    std::vector<std::string> symbols = {"a", "b", "c", "d"};
    for (size_t i = 0; i < count; ++i) {
        const std::string l = symbols[rng() % symbols.size()];
        const std::string r = symbols[rng() % symbols.size()];
        t.merges.push_back({l, r});
        if (l.size() + r.size() < 12) symbols.push_back(l + r);
    }
    std::shuffle(t.merges.begin(), t.merges.end(), rng);
    for (size_t i = 0; i < count / 10; ++i) t.merges.push_back(t.merges[rng() % t.merges.size()]);
    for (size_t rank = 0; rank < t.merges.size(); ++rank)
        t.ranks[{t.merges[rank].left, t.merges[rank].right}] = rank;
    int32_t id = 1;
    for (const std::string& s : symbols) t.vocab.push_back({s, id++});
    return t;
}

std::vector<std::string> run(const BpeModel& model, const std::string& word, bool long_path,
                             const std::vector<VocabEntry>& vocab) {
    std::vector<uint32_t> syms(word.begin(), word.end());
    for (auto& s : syms) s &= 0xFF;
    const size_t n = long_path ? model.merges().merge_long(syms.data(), syms.size())
                               : model.merges().merge_short(syms.data(), syms.size());
    std::map<int32_t, std::string> names;
    for (const VocabEntry& e : vocab) names[e.id] = e.token;
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) {
        const int32_t id = model.symbol_id(syms[i]);
        out.push_back(id == 0 ? "?" : names[id]);
    }
    return out;
}

TEST(Gpt2Bpe, ShortLongAndOracleAgreeOnRandomTables) {
    std::mt19937 rng(1234);
    for (int table = 0; table < 40; ++table) {
        RandomTable t = random_table(rng, 5 + rng() % 60);
        BpeModel model(t.vocab, t.merges);
        for (int w = 0; w < 60; ++w) {
            const size_t len = 1 + rng() % text::BpeMerges::kShortWord;
            std::string word;
            for (size_t i = 0; i < len; ++i) word += char('a' + rng() % (w % 2 ? 2 : 4));
            std::vector<std::string> expected;
            for (const std::string& s : oracle(word, t.ranks)) {
                bool known = false;
                for (const VocabEntry& e : t.vocab) known = known || e.token == s;
                expected.push_back(known ? s : "?");
            }
            ASSERT_EQ(run(model, word, false, t.vocab), expected)
                << "table " << table << " word " << word;
            ASSERT_EQ(run(model, word, true, t.vocab), expected)
                << "table " << table << " word " << word;
        }
        for (int w = 0; w < 3; ++w) {  // past kShortWord only the heap version applies
            std::string word;
            for (size_t i = 0, len = 129 + rng() % 400; i < len; ++i) word += char('a' + rng() % 3);
            std::vector<std::string> expected;
            for (const std::string& s : oracle(word, t.ranks)) {
                bool known = false;
                for (const VocabEntry& e : t.vocab) known = known || e.token == s;
                expected.push_back(known ? s : "?");
            }
            ASSERT_EQ(run(model, word, true, t.vocab), expected)
                << "table " << table << " word " << word;
        }
    }
}

TEST(Gpt2Bpe, PassFinishesBeforeALowerRankedNewPair) {
    // "ab a" is ranked above "a b": one pass of "a b" over "abab" gives "ab ab", and only then
    // are new pairs looked at, so "aba" never forms (merging one pair at a time would give it).
    std::vector<VocabEntry> vocab = {{"a", 1}, {"b", 2}, {"ab", 3}, {"aba", 4}};
    std::vector<MergeRule> merges = {{"ab", "a"}, {"a", "b"}};
    BpeModel model(vocab, merges);
    EXPECT_EQ(run(model, "abab", false, vocab), (std::vector<std::string>{"ab", "ab"}));
    EXPECT_EQ(run(model, "abab", true, vocab), (std::vector<std::string>{"ab", "ab"}));
}

TEST(Gpt2Bpe, UnknownResultIsIdZeroAndRepeatedMergeKeepsLastRank) {
    std::vector<VocabEntry> vocab = {{"c", 1}, {"d", 2}, {"e", 3}, {"cd", 4}, {"de", 5}};
    std::vector<MergeRule> merges = {{"c", "d"}, {"d", "e"}, {"c", "d"}, {"e", "e"}};
    BpeModel model(vocab, merges);
    std::vector<int32_t> ids;
    const std::string cde = "cde", ee = "ee";
    model.encode_piece(reinterpret_cast<const uint8_t*>(cde.data()), cde.size(), ids);
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 5}));
    ids.clear();
    model.encode_piece(reinterpret_cast<const uint8_t*>(ee.data()), ee.size(), ids);
    EXPECT_EQ(ids, (std::vector<int32_t>{0}));
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
