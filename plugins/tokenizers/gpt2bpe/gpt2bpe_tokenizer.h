// GPT2BPETokenizer: Megatron-LM's _GPT2BPETokenizer (byte-level BPE from vocab.json and
// merges.txt) giving the same ids as gpt2_tokenization.py, at native speed and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpe_files.h"
#include "bpe_model.h"
#include "mt/text/word_cache.h"
#include "mt/tokenizer.h"
#include "unicode_classes.h"

namespace mt::plugins::gpt2bpe {

class Gpt2BpeTokenizer final : public Tokenizer {
  public:
    // From --vocab-file and --merge-file.
    explicit Gpt2BpeTokenizer(const TokenizerOptions& options);
    // From parsed files; `source` names them in messages.
    Gpt2BpeTokenizer(const std::vector<VocabEntry>& vocab, const std::vector<MergeRule>& merges,
                     const std::string& source);

    // Throws mt::Error (and leaves `out` as it was) when `text` is not valid UTF-8.
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // Joins the tokens' bytes and decodes them with U+FFFD for ill-formed UTF-8. An id that is
    // not in the vocab, or whose token is not made of byte characters, is an mt::Error.
    std::string decode(std::span<const int32_t> ids) const override;
    // Appends the bytes of one id's token (decode() before its UTF-8 repair), with decode()'s
    // errors.
    void append_token_bytes(int32_t id, std::string& out) const;
    int64_t vocab_size() const override { return vocab_size_; }
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string_view name() const override { return "GPT2BPETokenizer"; }
    TokenizerIdentity dataset_identity() const override;

  private:
    enum TokenState : uint8_t { kAbsent, kBytes, kNotBytes };

    BpeModel model_;
    const UnicodeClasses& classes_;
    int32_t byte_id_[256];
    int64_t vocab_size_ = 0;
    SpecialIds special_ids_;
    // id -> bytes of its token, for decode: token_bytes_[token_at_[id], token_at_[id + 1]).
    std::vector<uint32_t> token_at_;
    std::vector<TokenState> token_state_;
    std::string token_bytes_;
    // Bytes -> id of every token that BPE maps to itself: most pieces of real text, found
    // here without BPE or a per-thread cache entry. Read-only after construction.
    text::WordCache known_;
    uint64_t serial_;                            // keys this tokenizer's per-thread word caches
    std::optional<TokenizerIdentity> identity_;  // built from files: none
};

}  // namespace mt::plugins::gpt2bpe
