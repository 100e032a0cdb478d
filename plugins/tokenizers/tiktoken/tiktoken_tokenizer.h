// TikTokenizer: Megatron-LM's CustomTikTokenizer (core_v0.13): tiktoken's encode_ordinary over
// Megatron's JSON vocabulary, with its special tokens first (rank r is id r + their number),
// native and thread-safe; or, under --tokenizer-classes core_v0.19, core_v0.19's
// TikTokenTokenizer: seven required special tokens, each answered as an id, and their text in
// the input encoded as them (encode(allowed_special="all")).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mt/text/bpe_merges.h"
#include "mt/text/regex_splitter.h"
#include "mt/text/word_cache.h"
#include "mt/tokenizer.h"

namespace mt::plugins::tiktoken {

// Megatron's --tiktoken-pattern v1 and v2 (PATTERN_TIKTOKEN, PATTERN_TIKTOKEN_V2).
extern const char* const kPatternV1;
extern const char* const kPatternV2;

class TikTokenizer final : public Tokenizer {
  public:
    // From --tokenizer-model, --tiktoken-pattern, --tiktoken-num-special-tokens,
    // --tiktoken-special-tokens (core_v0.19: --tokenizer-special-tokens) and --vocab-size,
    // refusing what Megatron's asserts refuse.
    explicit TikTokenizer(const TokenizerOptions& options);

    // tokenize(): core_v0.13's encode_ordinary (special tokens in the text are ordinary text);
    // core_v0.19's special tokens found in the text first, the leftmost (the longest of those
    // starting there: tiktoken's pick among overlapping ones follows a hash order), and the
    // text between encode_ordinary's. Throws mt::Error (leaving `out` as it was) when `text` is
    // not valid UTF-8.
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // detokenize(): the tokens' bytes (a special token's text) joined and read as UTF-8 with
    // U+FFFD for ill-formed sequences. An id outside the vocabulary is an mt::Error.
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return vocab_size_; }
    // bos is "<s>", eos and eod "</s>"; core_v0.13's class has no pad, cls, sep or mask,
    // core_v0.19's has all (<pad>, <cls>, <sep>, <mask>).
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string_view name() const override { return "TikTokenizer"; }
    // CustomTikTokenizer's unique_identifiers: its path and pattern, and the vocab_size,
    // num_special_tokens and special_tokens arguments as given (None when not); core_v0.19's
    // DefaultTokenizerText's: the path string, chat_template, the pattern and vocab_size flags
    // where given, num_special_tokens and special_tokens.
    TokenizerIdentity dataset_identity() const override { return identity_; }
    // The special tokens with their fillers, the ranks kept (--vocab-size) and the pattern.
    std::optional<ByteLevelBpeModel> byte_level_bpe() const override;
    // core_v0.19's token_to_id: a special token's id; else the id of the vocabulary's token
    // with those bytes plus the number of special tokens once more (Megatron adds the offset
    // its ranks already hold: encode_single_token(token) + num_special_tokens); else an
    // mt::Error, as Megatron's KeyError.
    int32_t token_to_id(std::string_view token) const override;
    // core_v0.19's ids_to_text(ids, remove_special_tokens=True): without <s>, </s> and every id
    // below the number of special tokens.
    std::string decode_without_special_tokens(std::span<const int32_t> ids) const override;

  private:
    struct Loaded;  // the options and the file, checked
    static Loaded load(const TokenizerOptions& options);
    TikTokenizer(const TokenizerOptions& options, Loaded loaded);

    // tiktoken's encode_ordinary of valid UTF-8.
    void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;
    // core_v0.19: the special token starting leftmost at or after `from`: its offset and id,
    // or npos.
    std::pair<size_t, int32_t> find_special(std::string_view text, size_t from) const;
    // The id of the vocabulary's token with these bytes, if there is one.
    std::optional<int32_t> vocabulary_id(std::string_view bytes) const;
    // BPE by rank (tiktoken's byte_pair_encode) of a piece that is not a token.
    void encode_bpe(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const;

    std::string pattern_;
    text::RegexSplitter splitter_;
    int32_t num_special_ = 0;
    int64_t vocab_size_ = 0;
    std::vector<std::string> special_tokens_;  // id -> text, for ids below num_special_
    std::string token_bytes_;                  // rank r: [token_at_[r], token_at_[r + 1])
    std::vector<uint32_t> token_at_;
    text::BpeMerges merges_;  // over ranks: every split of a token into two tokens
    // Bytes -> id of every token: a piece that is a token is that token (tiktoken looks it up
    // before BPE). Tokens longer than the word cache's keys are in long_tokens_.
    text::WordCache known_;
    std::unordered_map<std::string_view, int32_t> long_tokens_;
    SpecialIds special_ids_;
    // core_v0.19: special tokens in the text are theirs (core_v0.13: empty); by text, their
    // lengths (longest first) and first bytes.
    std::unordered_map<std::string_view, int32_t> special_of_;
    std::vector<size_t> special_lengths_;
    bool special_first_byte_[256] = {};
    uint64_t serial_;  // keys this tokenizer's per-thread word caches
    TokenizerIdentity identity_;
};

}  // namespace mt::plugins::tiktoken
