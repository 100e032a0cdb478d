// NullTokenizer: Megatron-LM's _NullTokenizer, for text that already holds token ids:
// tokenize is [int(x) for x in text.split(' ')], detokenize joins the ids with spaces, and the
// end-of-document id is --vocab-size (so the vocabulary is one larger). core_v0.19's class keeps
// the vocabulary at --vocab-size, with eod --null-tokenizer-eod-id (default --vocab-size - 1)
// and pad --null-tokenizer-pad-id.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/tokenizer.h"

namespace mt::plugins::null {

class NullTokenizer final : public Tokenizer {
  public:
    // Needs options.vocab_size (--vocab-size); options.classes picks core_v0.13's or 0.19's.
    explicit NullTokenizer(const TokenizerOptions& options);

    // An mt::Error names the first piece int() would reject (Megatron raises ValueError).
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return vocab_size_; }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override { return "NullTokenizer"; }
    // core_v0.13: _NullTokenizer [None], vocab_size (--vocab-size, as given); core_v0.19:
    // DefaultTokenizerText None, vocab_size, eod_id (when given), pad_id.
    TokenizerIdentity dataset_identity() const override { return identity_; }

  private:
    int64_t vocab_size_;
    SpecialIds special_;
    TokenizerIdentity identity_;
};

}  // namespace mt::plugins::null
