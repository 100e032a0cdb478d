// NullTokenizer: Megatron-LM's _NullTokenizer, for text that already holds token ids:
// tokenize is [int(x) for x in text.split(' ')], detokenize joins the ids with spaces, and the
// end-of-document id is --vocab-size (so the vocabulary is one larger).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/tokenizer.h"

namespace mt::plugins::null {

class NullTokenizer final : public Tokenizer {
  public:
    // Needs options.vocab_size (--vocab-size).
    explicit NullTokenizer(const TokenizerOptions& options);

    // An mt::Error names the first piece int() would reject (Megatron raises ValueError).
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return vocab_size_without_eod_ + 1; }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override { return "NullTokenizer"; }
    // _NullTokenizer [None], vocab_size (--vocab-size, as given).
    TokenizerIdentity dataset_identity() const override {
        return {"_NullTokenizer",
                {std::nullopt},
                {{"vocab_size", std::to_string(vocab_size_without_eod_)}}};
    }

  private:
    int64_t vocab_size_without_eod_;
    SpecialIds special_;
};

}  // namespace mt::plugins::null
