#include "bpe_encoder.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "mt/text/utf8.h"
#include "mt/text/word_cache.h"

namespace mt::plugins::sentencepiece {

namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";        // U+2581, SentencePiece's space
constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// The length of the character at text[at] and whether it is well-formed UTF-8.
size_t char_length(std::string_view text, size_t at, bool& valid) {
    uint32_t cp;
    const auto* p = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text::decode_utf8(p + at, p + text.size(), cp);
    valid = n > 0;
    return valid ? n : 1;
}

bool mergeable(const SentencePieceModel::Piece& p) {
    return p.type == SentencePieceModel::kNormal;
}

}  // namespace

std::optional<BpeEncoder> BpeEncoder::build(const SentencePieceModel& model, std::string* why_not) {
    auto refuse = [&](const char* why) {
        *why_not = why;
        return std::nullopt;
    };
    if (model.model_type != 2) return refuse("not a BPE model");
    if (model.precompiled_charsmap) return refuse("a normalizer with rules");
    if (model.remove_extra_whitespaces) return refuse("a normalizer that removes whitespace");
    if (model.treat_whitespace_as_suffix) return refuse("whitespace as a suffix");
    if (!model.escape_whitespaces) return refuse("spaces not escaped");
    BpeEncoder e;
    e.vocab_size_ = int64_t(model.pieces.size());
    e.byte_fallback_ = model.byte_fallback;
    e.add_dummy_prefix_ = model.add_dummy_prefix;
    std::fill(std::begin(e.ascii_ids_), std::end(e.ascii_ids_), -1);
    std::fill(std::begin(e.byte_ids_), std::end(e.byte_ids_), -1);
    std::unordered_map<std::string_view, int32_t> ids;  // SentencePiece's pieces_ map
    for (size_t i = 0; i < model.pieces.size(); ++i) {
        const SentencePieceModel::Piece& p = model.pieces[i];
        switch (p.type) {
            case SentencePieceModel::kNormal:
                ids.emplace(p.text, int32_t(i));
                break;
            case SentencePieceModel::kUserDefined:
                if (p.text.find(' ') != std::string::npos)
                    return refuse("a user-defined piece with a space");
                if (p.text.empty()) return refuse("an empty user-defined piece");
                e.user_defined_.emplace_back(p.text, int32_t(i));
                e.user_defined_first_byte_[uint8_t(p.text[0])] = true;
                break;
            case SentencePieceModel::kUnused:
                return refuse("unused pieces");
            case SentencePieceModel::kUnknown:
                e.unknown_id_ = int32_t(i);
                break;
            case SentencePieceModel::kByte: {
                unsigned b;
                if (std::sscanf(p.text.c_str(), "<0x%2X>", &b) == 1 && b < 256)
                    e.byte_ids_[b] = int32_t(i);
                break;
            }
            default:
                break;
        }
    }
    if (e.unknown_id_ < 0) return refuse("no <unk> piece");
    // Longest first: SentencePiece's prefix matcher takes the longest user-defined piece.
    std::stable_sort(e.user_defined_.begin(), e.user_defined_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    // Every merge of two pieces into a third, ranked by the third's score (higher first; equal
    // scores rank equal and the leftmost pair wins, as SentencePiece's agenda orders them).
    std::vector<float> scores;
    for (const auto& p : model.pieces)
        if (mergeable(p)) scores.push_back(p.score);
    std::sort(scores.begin(), scores.end(), std::greater<float>());
    scores.erase(std::unique(scores.begin(), scores.end()), scores.end());
    std::vector<text::BpeMerges::Merge> merges;
    e.cut_at_spaces_ = true;
    for (size_t i = 0; i < model.pieces.size(); ++i) {
        const SentencePieceModel::Piece& p = model.pieces[i];
        if (!mergeable(p)) continue;
        const uint32_t rank = uint32_t(
            std::lower_bound(scores.begin(), scores.end(), p.score, std::greater<float>()) -
            scores.begin());
        size_t at = 0, chars = 0;
        bool previous_is_space = false;
        while (at < p.text.size()) {
            bool valid;
            const size_t n = char_length(p.text, at, valid);
            const std::string_view ch = std::string_view(p.text).substr(at, n);
            // A piece's every character must be a piece, or SentencePiece could merge text we
            // would keep apart.
            if (!valid || !ids.count(ch)) return refuse("a piece whose characters are not pieces");
            const bool space = ch == kSpace;
            if (space && chars > 0 && !previous_is_space) e.cut_at_spaces_ = false;
            previous_is_space = space;
            if (at > 0) {
                const auto left = ids.find(std::string_view(p.text).substr(0, at));
                const auto right = ids.find(std::string_view(p.text).substr(at));
                if (left != ids.end() && right != ids.end())
                    merges.push_back(
                        {uint32_t(left->second), uint32_t(right->second), rank, uint32_t(i)});
            }
            at += n;
            ++chars;
        }
        if (chars == 1) {
            if (p.text.size() == 1 && uint8_t(p.text[0]) < 128)
                e.ascii_ids_[uint8_t(p.text[0])] = int32_t(i);
            else
                e.char_ids_.emplace(p.text, int32_t(i));
        }
    }
    if (e.byte_fallback_)
        for (int32_t id : e.byte_ids_)
            if (id < 0) return refuse("byte fallback without all 256 byte pieces");
    e.merges_ = std::make_shared<text::BpeMerges>(merges, text::BpeMerges::Order::kLowestFirst);
    e.cache_owner_ = text::WordCache::new_owner();
    return e;
}

int32_t BpeEncoder::char_id(std::string_view ch) const {
    if (ch.size() == 1 && uint8_t(ch[0]) < 128) return ascii_ids_[uint8_t(ch[0])];
    const auto it = char_ids_.find(std::string(ch));
    return it == char_ids_.end() ? -1 : it->second;
}

void BpeEncoder::append_unknown(std::string_view ch, std::vector<int32_t>& out) const {
    if (!byte_fallback_) {
        out.push_back(unknown_id_);
        return;
    }
    for (const char b : ch) out.push_back(byte_ids_[uint8_t(b)]);
}

void BpeEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
    const bool cacheable = piece.size() <= text::WordCache::kMaxKey;
    uint64_t hash = 0;
    text::WordCache& cache = text::WordCache::for_thread(cache_owner_);
    if (cacheable) {
        hash = text::WordCache::hash_piece(bytes, piece.size());
        size_t count;
        if (const int32_t* ids = cache.find(bytes, piece.size(), hash, count)) {
            out.insert(out.end(), ids, ids + count);
            return;
        }
    }
    // Symbols: the pieces of the characters, or markers past the vocabulary (never merged) for
    // characters no piece holds.
    std::vector<uint32_t> syms;
    std::vector<std::string_view> unknown;
    for (size_t at = 0; at < piece.size();) {
        bool valid;
        const size_t n = char_length(piece, at, valid);
        const std::string_view ch = piece.substr(at, n);
        const int32_t id = char_id(ch);
        if (id >= 0) {
            syms.push_back(uint32_t(id));
        } else {
            syms.push_back(uint32_t(vocab_size_ + int64_t(unknown.size())));
            unknown.push_back(ch);
        }
        at += n;
    }
    syms.resize(merges_->merge(syms.data(), syms.size()));
    const size_t start = out.size();
    for (const uint32_t s : syms) {
        if (int64_t(s) < vocab_size_)
            out.push_back(int32_t(s));
        else
            append_unknown(unknown[size_t(int64_t(s) - vocab_size_)], out);
    }
    if (cacheable) cache.insert(bytes, piece.size(), hash, out.data() + start, out.size() - start);
}

void BpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    // The identity normalizer: the dummy prefix, spaces as U+2581, a malformed byte as U+FFFD.
    std::string normalized;
    normalized.reserve(text.size() + 3 * 16);
    if (add_dummy_prefix_) normalized += kSpace;
    for (size_t at = 0; at < text.size();) {
        bool valid;
        const size_t n = char_length(text, at, valid);
        if (!valid)
            normalized += kReplacement;
        else if (text[at] == ' ')
            normalized += kSpace;
        else
            normalized.append(text, at, n);
        at += n;
    }
    // Cut before each U+2581 that follows another character (when merges cannot cross it) and
    // around user-defined pieces, which are matched whole and never merged.
    const std::string_view s = normalized;
    size_t piece_start = 0;
    bool previous_is_space = false;
    for (size_t at = 0; at < s.size();) {
        if (user_defined_first_byte_[uint8_t(s[at])]) {
            const auto match =
                std::find_if(user_defined_.begin(), user_defined_.end(),
                             [&](const auto& u) { return s.substr(at).starts_with(u.first); });
            if (match != user_defined_.end()) {
                encode_piece(s.substr(piece_start, at - piece_start), out);
                out.push_back(match->second);
                at += match->first.size();
                piece_start = at;
                previous_is_space = false;
                continue;
            }
        }
        bool valid;
        const size_t n = char_length(s, at, valid);
        const bool space = s.substr(at, n) == kSpace;
        if (cut_at_spaces_ && space && at > piece_start && !previous_is_space) {
            encode_piece(s.substr(piece_start, at - piece_start), out);
            piece_start = at;
        }
        previous_is_space = space;
        at += n;
    }
    encode_piece(s.substr(piece_start), out);
}

}  // namespace mt::plugins::sentencepiece
