#include "bpe_model.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"

namespace mt::plugins::hf_tokenizer {

using text::decode_utf8;
using text::kByteLevel;

namespace {

// The raw bytes a byte-level token stands for, or nullopt when it has another character.
std::optional<std::string> byte_level_bytes(const std::string& token) {
    std::string bytes;
    const auto* p = reinterpret_cast<const uint8_t*>(token.data());
    const auto* end = p + token.size();
    while (p < end) {
        uint32_t cp = 0;
        const size_t len = decode_utf8(p, end, cp);
        const int b = len ? kByteLevel.byte_of(cp) : -1;
        if (b < 0) return std::nullopt;
        bytes.push_back(char(b));
        p += len;
    }
    return bytes;
}

std::unordered_map<std::string, int32_t> vocab_of(const BpeSpec& spec, const std::string& source) {
    std::unordered_map<std::string, int32_t> vocab;
    for (const auto& [token, id] : spec.vocab) {
        MT_CHECK(id >= 0, source, ": vocab id ", id, " of '", token, "' is negative");
        vocab.insert_or_assign(token, id);  // a repeated key keeps its last id, as serde does
    }
    return vocab;
}

}  // namespace

std::vector<text::BpeMerges::Merge> BpeModel::merges_of(
    const BpeSpec& spec, const std::unordered_map<std::string, int32_t>& vocab,
    const std::string& source) {
    auto id_of = [&](const std::string& token, size_t rank) {
        auto it = vocab.find(token);
        MT_CHECK(it != vocab.end(), source, ": merge ", rank, " uses '", token,
                 "', which is not in the vocab");
        return uint32_t(it->second);
    };
    std::vector<text::BpeMerges::Merge> merges;
    merges.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
        const auto& [left, right] = spec.merges[rank];
        merges.push_back(
            {id_of(left, rank), id_of(right, rank), uint32_t(rank), id_of(left + right, rank)});
    }
    return merges;
}

BpeModel::BpeModel(const BpeSpec& spec, bool byte_level, const std::string& source)
    : byte_level_(byte_level),
      vocab_(vocab_of(spec, source)),
      fuse_unk_(spec.fuse_unk),
      byte_fallback_(spec.byte_fallback),
      ignore_merges_(spec.ignore_merges),
      merges_(merges_of(spec, vocab_, source), text::BpeMerges::Order::kLowestFirst) {
    int32_t max_id = -1;
    for (const auto& [token, id] : vocab_) max_id = std::max(max_id, id);
    MT_CHECK(int64_t(max_id) < 4 * int64_t(vocab_.size()) + 1024, source, ": vocab ids go up to ",
             max_id, " for only ", vocab_.size(), " tokens; ids this sparse are not supported");
    tokens_.resize(size_t(max_id + 1));
    has_token_.assign(tokens_.size(), false);
    std::fill(std::begin(ascii_id_), std::end(ascii_id_), -1);
    std::fill(std::begin(byte_id_), std::end(byte_id_), -1);
    std::fill(std::begin(fallback_id_), std::end(fallback_id_), -1);
    for (const auto& [token, id] : vocab_) {
        tokens_[size_t(id)] = token;
        has_token_[size_t(id)] = true;
        if (byte_level_) {
            if (auto bytes = byte_level_bytes(token)) {
                piece_vocab_.emplace(*bytes, id);
                if (bytes->size() == 1) byte_id_[uint8_t((*bytes)[0])] = id;
            }
        } else {
            piece_vocab_.emplace(token, id);
            uint32_t cp = 0;
            const auto* p = reinterpret_cast<const uint8_t*>(token.data());
            if (!token.empty() && decode_utf8(p, p + token.size(), cp) == token.size()) {
                if (cp < 128)
                    ascii_id_[cp] = id;
                else
                    char_id_.emplace(cp, id);
            }
        }
        if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
            // tokenizers looks byte b up as format!("<{b:#04X}>"): "<0x" and two upper-case digits.
            auto digit = [](char c) {
                return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            };
            const int hi = digit(token[3]), lo = digit(token[4]);
            if (hi >= 0 && lo >= 0) fallback_id_[hi * 16 + lo] = id;
        }
    }
    if (spec.unk_token) {
        auto it = vocab_.find(*spec.unk_token);
        MT_CHECK(it != vocab_.end(), source, ": unk_token '", *spec.unk_token,
                 "' is not in the vocab");
        unk_id_ = it->second;
    }
}

bool BpeModel::cuts_before_runs_of(const std::string& marker) const {
    if (byte_level_ || ignore_merges_ || marker.empty() || !vocab_.count(marker)) return false;
    for (const text::BpeMerges::Slot& s : merges_.slots()) {
        if (s.key == text::BpeMerges::kEmptyKey) continue;
        const std::string& token = tokens_[s.result];
        for (size_t at = token.find(marker, 1); at != std::string::npos;
             at = token.find(marker, at + 1))
            if (at < marker.size() || token.compare(at - marker.size(), marker.size(), marker) != 0)
                return false;
    }
    return true;
}

std::optional<int32_t> BpeModel::token_to_id(const std::string& token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<uint32_t>& syms) const {
    const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
    const auto* end = p + piece.size();
    // An unknown character waits here: with fuse_unk a run of them becomes one unk. As in
    // tokenizers, byte-fallback tokens do not flush it.
    bool pending_unk = false;
    while (p < end) {
        int32_t id = -1;
        size_t len = 1;
        if (byte_level_) {
            id = byte_id_[*p];
        } else if (*p < 0x80) {
            id = ascii_id_[*p];
        } else {
            uint32_t cp = 0;
            len = decode_utf8(p, end, cp);
            auto it = char_id_.find(cp);
            if (it != char_id_.end()) id = it->second;
        }
        if (id >= 0) {
            if (pending_unk) syms.push_back(uint32_t(*unk_id_));
            pending_unk = false;
            syms.push_back(uint32_t(id));
        } else if (byte_fallback_ &&
                   std::all_of(p, p + len, [&](uint8_t b) { return fallback_id_[b] >= 0; })) {
            for (size_t k = 0; k < len; ++k) syms.push_back(uint32_t(fallback_id_[p[k]]));
        } else if (unk_id_) {
            if (pending_unk && !fuse_unk_) syms.push_back(uint32_t(*unk_id_));
            pending_unk = true;
        }  // no unk token: tokenizers drops the character
        p += len;
    }
    if (pending_unk) syms.push_back(uint32_t(*unk_id_));
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
    if (ignore_merges_) {
        auto it = piece_vocab_.find(std::string(piece));
        if (it != piece_vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    thread_local std::vector<uint32_t> syms;
    syms.clear();
    initial_symbols(piece, syms);
    const size_t n = merges_.merge(syms.data(), syms.size());
    out.insert(out.end(), syms.begin(), syms.begin() + n);
}

}  // namespace mt::plugins::hf_tokenizer
