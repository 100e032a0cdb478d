#include "tiktoken_tokenizer.h"

#include <algorithm>
#include <set>

#include "mt/error.h"
#include "mt/text/python_repr.h"
#include "mt/text/utf8.h"
#include "tiktoken_vocab.h"

namespace mt::plugins::tiktoken {

const char* const kPatternV1 =
    R"([^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kPatternV2 =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

using text::append_replacing_invalid;
using text::BpeMerges;
using text::check_utf8;
using text::RegexSplitter;
using text::WordCache;

constexpr int64_t kDefaultVocabSize = int64_t(1) << 17;  // Megatron's fallback, 131072
constexpr int64_t kDefaultNumSpecialTokens = 1000;       // --tiktoken-num-special-tokens
const std::vector<std::string> kRequiredSpecialTokens = {"<unk>", "<s>", "</s>"};
// core_v0.19's SPECIAL_TOKENS, its default and required ones.
const std::vector<std::string> kCoreSpecialTokens = {"<unk>", "<s>",   "</s>", "<mask>",
                                                     "<pad>", "<cls>", "<sep>"};

// Every way to cut a token into two tokens merges into it at its rank: tiktoken merges the
// adjacent parts whose joined bytes have the lowest rank, and its parts are always tokens.
std::vector<BpeMerges::Merge> merges_of(const std::vector<std::string>& ranks) {
    std::unordered_map<std::string_view, uint32_t> rank_of;
    rank_of.reserve(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r) rank_of.emplace(ranks[r], uint32_t(r));
    std::vector<BpeMerges::Merge> merges;
    for (size_t r = 0; r < ranks.size(); ++r) {
        const std::string_view token = ranks[r];
        for (size_t k = 1; k < token.size(); ++k) {
            auto left = rank_of.find(token.substr(0, k));
            if (left == rank_of.end()) continue;
            auto right = rank_of.find(token.substr(k));
            if (right == rank_of.end()) continue;
            merges.push_back({left->second, right->second, uint32_t(r), uint32_t(r)});
        }
    }
    return merges;
}

}  // namespace

struct TikTokenizer::Loaded {
    std::string pattern;
    int64_t vocab_size = 0;
    std::vector<std::string> special_tokens;  // with Megatron's <SPECIAL_i> fillers
    std::vector<std::string> ranks;
};

TikTokenizer::Loaded TikTokenizer::load(const TokenizerOptions& options) {
    // build_tokenizer's and the class's asserts, in their order.
    Loaded l;
    const bool core = options.classes == TokenizerOptions::Classes::core_v0_19;
    MT_CHECK(!options.tokenizer_model.empty(),
             "TikTokenizer needs --tokenizer-model (Megatron's JSON vocabulary)");
    // core_v0.19 takes v2 when no pattern is given.
    const std::string& p =
        core && options.tiktoken_pattern.empty() ? "v2" : options.tiktoken_pattern;
    MT_CHECK(p == "v1" || p == "v2", "TikTokenizer needs --tiktoken-pattern v1 or v2",
             p.empty() ? "" : str(", not '", p.substr(0, 100), "'"));
    l.pattern = p == "v1" ? kPatternV1 : kPatternV2;
    l.vocab_size = options.vocab_size.value_or(kDefaultVocabSize);
    const int64_t num_special =
        options.tiktoken_num_special_tokens.value_or(kDefaultNumSpecialTokens);
    MT_CHECK(!core || !options.tiktoken_special_tokens,
             "TikTokenizer: core_v0.19 takes its special tokens from --tokenizer-special-tokens, "
             "not --tiktoken-special-tokens");
    const std::string flag = core ? "--tokenizer-special-tokens" : "--tiktoken-special-tokens";
    const std::vector<std::string>& required = core ? kCoreSpecialTokens : kRequiredSpecialTokens;
    l.special_tokens =
        (core ? options.special_tokens : options.tiktoken_special_tokens).value_or(required);
    const std::set<std::string> unique(l.special_tokens.begin(), l.special_tokens.end());
    MT_CHECK(unique.size() == l.special_tokens.size(), "TikTokenizer: ", flag,
             " should be unique: ", text::python_repr(l.special_tokens).substr(0, 300));
    MT_CHECK(int64_t(l.special_tokens.size()) <= num_special && num_special < l.vocab_size,
             "TikTokenizer: needs len(", flag, ") (", l.special_tokens.size(),
             ") <= --tiktoken-num-special-tokens (", num_special, ") < --vocab-size (",
             l.vocab_size, ")");
    for (const std::string& t : required)
        MT_CHECK(unique.count(t), "TikTokenizer: ", flag, " should include ",
                 text::python_repr(required));
    if (core)
        for (const std::string& t : l.special_tokens)
            MT_CHECK(!t.empty(), "TikTokenizer: --tokenizer-special-tokens holds an empty token");
    for (int64_t i = int64_t(l.special_tokens.size()); i < num_special; ++i)
        l.special_tokens.push_back(str("<SPECIAL_", i, ">"));
    MT_CHECK(std::set<std::string>(l.special_tokens.begin(), l.special_tokens.end()).size() ==
                 l.special_tokens.size(),
             "TikTokenizer: a ", flag, " entry is also the name of a filler <SPECIAL_i> token");
    const int64_t inner = l.vocab_size - num_special;
    MT_CHECK(inner >= 256, "TikTokenizer: --vocab-size (", l.vocab_size,
             ") minus --tiktoken-num-special-tokens (", num_special,
             ") leaves fewer than the 256 byte tokens");
    l.ranks = read_tiktoken_ranks(options.tokenizer_model, size_t(inner));
    MT_CHECK(int64_t(l.ranks.size()) == inner, "TikTokenizer: ", options.tokenizer_model, " has ",
             l.ranks.size(), " tokens, fewer than --vocab-size (", l.vocab_size,
             ") minus --tiktoken-num-special-tokens (", num_special, ")");
    return l;
}

TikTokenizer::TikTokenizer(const TokenizerOptions& options)
    : TikTokenizer(options, load(options)) {}

TikTokenizer::TikTokenizer(const TokenizerOptions& options, Loaded l)
    : pattern_(l.pattern),
      splitter_(l.pattern),
      num_special_(int32_t(l.special_tokens.size())),
      vocab_size_(l.vocab_size),
      special_tokens_(std::move(l.special_tokens)),
      merges_(merges_of(l.ranks), BpeMerges::Order::kLowestFirst),
      known_(l.ranks.size()),
      serial_(WordCache::new_owner()) {
    token_at_.reserve(l.ranks.size() + 1);
    for (const std::string& t : l.ranks) {
        token_at_.push_back(uint32_t(token_bytes_.size()));
        token_bytes_ += t;
    }
    token_at_.push_back(uint32_t(token_bytes_.size()));
    for (size_t r = 0; r < l.ranks.size(); ++r) {
        const size_t n = token_at_[r + 1] - token_at_[r];
        const auto* bytes = reinterpret_cast<const uint8_t*>(token_bytes_.data() + token_at_[r]);
        const int32_t id = int32_t(r) + num_special_;
        if (n > WordCache::kMaxKey)
            long_tokens_.emplace(std::string_view(token_bytes_).substr(token_at_[r], n), id);
        else if (n > 1)
            known_.insert(bytes, n, WordCache::hash_piece(bytes, n), &id, 1);
    }
    auto id_of = [&](const std::string& token) {
        return int32_t(std::find(special_tokens_.begin(), special_tokens_.end(), token) -
                       special_tokens_.begin());
    };
    special_ids_.bos = id_of("<s>");
    special_ids_.eos = id_of("</s>");
    special_ids_.eod = special_ids_.eos;
    if (options.classes == TokenizerOptions::Classes::core_v0_19) {
        special_ids_.mask = id_of("<mask>");
        special_ids_.pad = id_of("<pad>");
        special_ids_.cls = id_of("<cls>");
        special_ids_.sep = id_of("<sep>");
        for (size_t i = 0; i < special_tokens_.size(); ++i) {
            const std::string& t = special_tokens_[i];
            special_of_.emplace(t, int32_t(i));
            special_first_byte_[uint8_t(t[0])] = true;
            if (std::find(special_lengths_.begin(), special_lengths_.end(), t.size()) ==
                special_lengths_.end())
                special_lengths_.push_back(t.size());
        }
        std::sort(special_lengths_.rbegin(), special_lengths_.rend());
        // DefaultTokenizerText records build_tokenizer's keyword arguments, the pattern and
        // vocab_size only where their flags were given.
        identity_ =
            core_v0_19_identity(options, options.tokenizer_model, {{"chat_template", "None"}});
        if (!options.tiktoken_pattern.empty())
            identity_.options.emplace_back("pattern", options.tiktoken_pattern);
        if (options.vocab_size)
            identity_.options.emplace_back("vocab_size", std::to_string(*options.vocab_size));
        identity_.options.emplace_back("num_special_tokens", std::to_string(num_special_));
        identity_.options.emplace_back(
            "special_tokens",
            options.special_tokens ? text::python_repr(*options.special_tokens) : "None");
        return;
    }

    // MegatronTokenizer.__init__ records the arguments as CustomTikTokenizer received them.
    identity_ = {"CustomTikTokenizer",
                 {options.tokenizer_model},
                 {{"pattern", l.pattern},
                  {"vocab_size", options.vocab_size ? std::to_string(*options.vocab_size) : "None"},
                  {"num_special_tokens", std::to_string(num_special_)},
                  {"special_tokens", options.tiktoken_special_tokens
                                         ? text::python_repr(*options.tiktoken_special_tokens)
                                         : "None"}}};
}

void TikTokenizer::encode_bpe(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const {
    thread_local std::vector<uint32_t> syms;
    syms.assign(bytes, bytes + n);  // rank b is the byte b
    const size_t m = merges_.merge(syms.data(), n);
    for (size_t i = 0; i < m; ++i) out.push_back(int32_t(syms[i]) + num_special_);
}

std::pair<size_t, int32_t> TikTokenizer::find_special(std::string_view text, size_t from) const {
    for (size_t i = from; i < text.size(); ++i) {
        if (!special_first_byte_[uint8_t(text[i])]) continue;
        for (const size_t n : special_lengths_) {
            if (n > text.size() - i) continue;
            auto it = special_of_.find(text.substr(i, n));
            if (it != special_of_.end()) return {i, it->second};
        }
    }
    return {std::string_view::npos, 0};
}

void TikTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    check_utf8(text, "TikTokenizer");
    const size_t start = out.size();
    try {
        if (special_of_.empty()) {
            encode_ordinary(text, out);
            return;
        }
        for (size_t at = 0;;) {
            const auto [found, id] = find_special(text, at);
            encode_ordinary(text.substr(at, found - at), out);
            if (found == std::string_view::npos) break;
            out.push_back(id);
            at = found + special_tokens_[size_t(id)].size();
        }
    } catch (...) {
        out.resize(start);
        throw;
    }
}

void TikTokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
    WordCache& cache = WordCache::for_thread(serial_);
    thread_local std::vector<RegexSplitter::Match> matches;
    matches.clear();
    splitter_.find_all(text, matches);
    const auto* base = reinterpret_cast<const uint8_t*>(text.data());
    // encode_ordinary encodes the matches only (the patterns leave nothing between them).
    for (const auto& m : matches) {
        const uint8_t* piece = base + m.begin;
        const size_t n = m.end - m.begin;
        if (n == 1) {
            out.push_back(int32_t(*piece) + num_special_);
            continue;
        }
        if (n > WordCache::kMaxKey) {
            auto it = long_tokens_.find(text.substr(m.begin, n));
            if (it != long_tokens_.end())
                out.push_back(it->second);
            else
                encode_bpe(piece, n, out);
            continue;
        }
        cache.append_ids(&known_, piece, n, out,
                         [&](std::vector<int32_t>& ids) { encode_bpe(piece, n, ids); });
    }
}

std::optional<int32_t> TikTokenizer::vocabulary_id(std::string_view bytes) const {
    const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
    const size_t n = bytes.size();
    if (n == 1) return int32_t(*b) + num_special_;  // every byte is a rank (below 256)
    if (n == 0) return std::nullopt;
    if (n > WordCache::kMaxKey) {
        const auto it = long_tokens_.find(bytes);
        return it != long_tokens_.end() ? std::optional<int32_t>(it->second) : std::nullopt;
    }
    size_t count = 0;
    const int32_t* ids = known_.find(b, n, WordCache::hash_piece(b, n), count);
    return ids && count == 1 ? std::optional<int32_t>(*ids) : std::nullopt;
}

int32_t TikTokenizer::token_to_id(std::string_view token) const {
    MT_CHECK(!special_of_.empty(), "TikTokenizer: not supported yet: the id of a token (core_v0.19's "
             "tokens_to_ids) with core_v0.13's class (--tokenizer-classes core_v0.19 has it)");
    if (const auto it = special_of_.find(token); it != special_of_.end()) return it->second;
    const std::optional<int32_t> id = vocabulary_id(token);
    MT_CHECK(id.has_value(), "TikTokenizer: '", token.substr(0, 200),
             "' is neither one of its special tokens nor one token of its vocabulary "
             "(core_v0.19's token_to_id raises KeyError for it too)");
    return *id + num_special_;
}

std::string TikTokenizer::decode_without_special_tokens(std::span<const int32_t> ids) const {
    std::vector<int32_t> kept;
    for (const int32_t id : ids)
        if (id >= num_special_ && id != special_ids_.bos && id != special_ids_.eos)
            kept.push_back(id);
    return decode(kept);
}

std::optional<ByteLevelBpeModel> TikTokenizer::byte_level_bpe() const {
    ByteLevelBpeModel model{special_tokens_, {}, pattern_};
    model.ranks.reserve(token_at_.size() - 1);
    for (size_t r = 0; r + 1 < token_at_.size(); ++r)
        model.ranks.push_back(token_bytes_.substr(token_at_[r], token_at_[r + 1] - token_at_[r]));
    return model;
}

std::string TikTokenizer::decode(std::span<const int32_t> ids) const {
    std::string bytes;
    for (const int32_t id : ids) {
        MT_CHECK(id >= 0 && id < vocab_size_, "TikTokenizer: cannot decode id ", id,
                 ": not in the vocabulary (", vocab_size_, " tokens)");
        if (id < num_special_) {
            bytes += special_tokens_[size_t(id)];
        } else {
            const size_t r = size_t(id - num_special_);
            bytes.append(token_bytes_, token_at_[r], token_at_[r + 1] - token_at_[r]);
        }
    }
    std::string text;
    text.reserve(bytes.size());
    append_replacing_invalid(text, bytes);
    return text;
}

}  // namespace mt::plugins::tiktoken
