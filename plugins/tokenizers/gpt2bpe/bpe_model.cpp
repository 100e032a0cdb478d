#include "bpe_model.h"

#include <string_view>
#include <unordered_map>

#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"

namespace mt::plugins::gpt2bpe {

BpeModel::Interned BpeModel::intern(const std::vector<MergeRule>& merges) {
    Interned out;
    std::unordered_map<std::string, uint32_t> symbols;
    auto symbol = [&](std::string s) {
        auto [it, inserted] = symbols.try_emplace(s, uint32_t(out.names.size()));
        if (inserted) out.names.push_back(std::move(s));
        return it->second;
    };
    for (uint32_t b = 0; b < 256; ++b) {
        std::string s;
        text::append_utf8(s, text::kByteLevel.char_of_byte[b]);
        symbol(std::move(s));
    }
    out.merges.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const MergeRule& m = merges[rank];
        out.merges.push_back(
            {symbol(m.left), symbol(m.right), uint32_t(rank), symbol(m.left + m.right)});
    }
    return out;
}

BpeModel::BpeModel(const std::vector<VocabEntry>& vocab, const std::vector<MergeRule>& merges)
    : BpeModel(vocab, intern(merges)) {}

BpeModel::BpeModel(const std::vector<VocabEntry>& vocab, const Interned& interned)
    : merges_(interned.merges, text::BpeMerges::Order::kPassPerRank) {
    std::unordered_map<std::string_view, int32_t> ids;
    for (const VocabEntry& e : vocab) ids.insert_or_assign(std::string_view(e.token), e.id);
    symbol_id_.resize(interned.names.size());
    for (size_t s = 0; s < interned.names.size(); ++s) {
        auto it = ids.find(interned.names[s]);
        symbol_id_[s] = it == ids.end() ? 0 : it->second;
    }
}

void BpeModel::encode_piece(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const {
    using text::BpeMerges;
    if (n <= BpeMerges::kShortWord) {
        uint32_t syms[BpeMerges::kShortWord];
        for (size_t i = 0; i < n; ++i) syms[i] = bytes[i];
        const size_t m = merges_.merge_short(syms, n);
        for (size_t i = 0; i < m; ++i) out.push_back(symbol_id_[syms[i]]);
    } else {
        std::vector<uint32_t> syms(bytes, bytes + n);
        const size_t m = merges_.merge_long(syms.data(), n);
        for (size_t i = 0; i < m; ++i) out.push_back(symbol_id_[syms[i]]);
    }
}

}  // namespace mt::plugins::gpt2bpe
