#include "bpe_model.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "byte_level.h"
#include "mt/error.h"
#include "utf8.h"

namespace mt::plugins::hf_tokenizer {

using gpt2bpe::decode_utf8;
using gpt2bpe::kByteLevel;

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

}  // namespace

BpeModel::BpeModel(const BpeSpec& spec, bool byte_level, const std::string& source)
    : byte_level_(byte_level),
      fuse_unk_(spec.fuse_unk),
      byte_fallback_(spec.byte_fallback),
      ignore_merges_(spec.ignore_merges) {
    int32_t max_id = -1;
    for (const auto& [token, id] : spec.vocab) {
        MT_CHECK(id >= 0, source, ": vocab id ", id, " of '", token, "' is negative");
        max_id = std::max(max_id, id);
        vocab_.insert_or_assign(token, id);  // a repeated key keeps its last id, as serde does
    }
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

    const size_t capacity = std::max<size_t>(16, std::bit_ceil(spec.merges.size() * 2 + 1));
    table_.assign(capacity, Slot{kEmpty, 0, 0});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    auto id_of = [&](const std::string& token, size_t rank) {
        auto it = vocab_.find(token);
        MT_CHECK(it != vocab_.end(), source, ": merge ", rank, " uses '", token,
                 "', which is not in the vocab");
        return it->second;
    };
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
        const auto& [left, right] = spec.merges[rank];
        const uint64_t key =
            (uint64_t(uint32_t(id_of(left, rank))) << 32) | uint32_t(id_of(right, rank));
        const int32_t result = id_of(left + right, rank);
        size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
        while (table_[i].key != kEmpty && table_[i].key != key) i = (i + 1) & mask_;
        table_[i] = Slot{key, uint32_t(rank), result};  // a repeated pair keeps its last rank
    }
}

bool BpeModel::cuts_before_runs_of(const std::string& marker) const {
    if (byte_level_ || ignore_merges_ || marker.empty() || !vocab_.count(marker)) return false;
    for (const Slot& s : table_) {
        if (s.key == kEmpty) continue;
        const std::string& token = tokens_[size_t(s.result)];
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

void BpeModel::initial_symbols(std::string_view piece, std::vector<int32_t>& syms) const {
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
            if (pending_unk) syms.push_back(*unk_id_);
            pending_unk = false;
            syms.push_back(id);
        } else if (byte_fallback_ &&
                   std::all_of(p, p + len, [&](uint8_t b) { return fallback_id_[b] >= 0; })) {
            for (size_t k = 0; k < len; ++k) syms.push_back(fallback_id_[p[k]]);
        } else if (unk_id_) {
            if (pending_unk && !fuse_unk_) syms.push_back(*unk_id_);
            pending_unk = true;
        }  // no unk token: tokenizers drops the character
        p += len;
    }
    if (pending_unk) syms.push_back(*unk_id_);
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
    if (ignore_merges_) {
        auto it = piece_vocab_.find(std::string(piece));
        if (it != piece_vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    thread_local std::vector<int32_t> syms;
    syms.clear();
    initial_symbols(piece, syms);
    if (syms.size() <= 64)
        merge_short(syms);
    else
        merge_long(syms);
    out.insert(out.end(), syms.begin(), syms.end());
}

void BpeModel::merge_short(std::vector<int32_t>& syms) const {
    constexpr uint32_t kNone = UINT32_MAX;
    uint32_t rank[64];
    int32_t result[64];
    auto look_up = [&](size_t i) {
        const Slot* s = find(syms[i], syms[i + 1]);
        rank[i] = s ? s->rank : kNone;
        result[i] = s ? s->result : 0;
    };
    size_t n = syms.size();
    for (size_t i = 0; i + 1 < n; ++i) look_up(i);
    while (n > 1) {
        size_t at = 0;
        for (size_t i = 1; i + 1 < n; ++i)
            if (rank[i] < rank[at]) at = i;
        if (rank[at] == kNone) break;
        syms[at] = result[at];
        for (size_t i = at + 1; i + 1 < n; ++i) {
            syms[i] = syms[i + 1];
            rank[i] = rank[i + 1];
            result[i] = result[i + 1];
        }
        --n;
        if (at > 0) look_up(at - 1);
        if (at + 1 < n) look_up(at);
    }
    syms.resize(n);
}

void BpeModel::merge_long(std::vector<int32_t>& syms) const {
    const size_t n = syms.size();
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
        if (const Slot* s = find(syms[i], syms[next[i]])) {
            heap.push_back((uint64_t(s->rank) << 32) | i);
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
    };
    for (size_t i = 0; i + 1 < n; ++i) push(uint32_t(i));
    while (!heap.empty()) {
        const uint32_t rank = uint32_t(heap.front() >> 32);
        const uint32_t i = uint32_t(heap.front());
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        heap.pop_back();
        if (!alive[i] || next[i] == kNone) continue;
        const Slot* s = find(syms[i], syms[next[i]]);
        if (s == nullptr || s->rank != rank) continue;  // a stale entry: the pair has changed
        const uint32_t j = next[i];
        syms[i] = s->result;
        alive[j] = false;
        next[i] = next[j];
        if (next[j] != kNone) prev[next[j]] = i;
        if (prev[i] != kNone) push(prev[i]);
        push(i);
    }
    size_t m = 0;
    for (uint32_t i = 0; i != kNone; i = next[i]) syms[m++] = syms[i];  // node 0 never dies
    syms.resize(m);
}

}  // namespace mt::plugins::hf_tokenizer
