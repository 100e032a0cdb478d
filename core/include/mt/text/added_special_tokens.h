// The special tokens transformers' tokenizers add over a vocabulary, as core_v0.19's
// MegatronHFTokenizer (GPT2BPETokenizer, BertWordPiece*) sets them up: each is found in the raw
// text before the vocabulary's own tokenizer runs on the text between them, and a token the
// vocabulary lacks gets the next id after it (add_special_tokens).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mt/api.h"
#include "mt/text/added_token_splitter.h"

namespace mt::text {

class MT_API AddedSpecialTokens {
  public:
    // `tokens` in the order transformers adds them (a repeat is ignored); `vocab_id` gives a
    // token's id in the vocabulary or -1; `vocab_size` is the vocabulary's len().
    AddedSpecialTokens(const std::vector<std::string>& tokens,
                       const std::function<int32_t(std::string_view)>& vocab_id,
                       int64_t vocab_size);

    // len(tokenizer): the vocabulary and the tokens added after it.
    int64_t size() const { return size_; }
    // The id of a special token (which must be one).
    int32_t id(std::string_view token) const;
    bool is_special(int32_t id) const { return content_.count(id) != 0; }
    // The text of an id past the vocabulary, or nullptr.
    const std::string* added(int32_t id) const;

    // Appends the ids of `text`: special tokens as theirs, the text between them through
    // `encode_plain(piece, out)` (pieces are never empty).
    void encode(
        std::string_view text, std::vector<int32_t>& out,
        const std::function<void(std::string_view, std::vector<int32_t>&)>& encode_plain) const;

  private:
    AddedSpecialTokens(const std::vector<AddedTokenMatch>& tokens, int64_t vocab_size);

    std::unordered_map<int32_t, std::string> content_;  // every special id -> its text
    int64_t vocab_size_ = 0;
    int64_t size_ = 0;
    AddedTokenSplitter splitter_;
};

}  // namespace mt::text
