// HuggingFaceTokenizer as core_v0.19 builds it (megatron/core/tokenizers' HuggingFaceTokenizer
// over transformers' AutoTokenizer on --tokenizer-model): the folder's tokenizer with
// --tokenizer-special-tokens added as special tokens, sep/eos and cls/bos standing in for each
// other, detokenize through convert_tokens_to_string, and under
// --tokenizer-hf-no-include-special-tokens no post-processor tokens (Llama's BOS) and no
// special tokens in decoded text.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hf_tokenizer.h"
#include "mt/tokenizer.h"
#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

class CoreHfTokenizer final : public Tokenizer {
  public:
    explicit CoreHfTokenizer(const TokenizerOptions& options);

    void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
        tokenizer_.encode_append(text, out);
    }
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return tokenizer_.vocab_size(); }
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string_view name() const override { return "HuggingFaceTokenizer"; }
    TokenizerIdentity dataset_identity() const override { return identity_; }
    std::vector<std::pair<std::string, int32_t>> additional_special_tokens() const override {
        return additional_;
    }
    // convert_tokens_to_ids: the token's id, else the unknown token's (an mt::Error without one).
    int32_t token_to_id(std::string_view token) const override;
    // ids_to_text(ids, remove_special_tokens=True).
    std::string decode_without_special_tokens(std::span<const int32_t> ids) const override;

  private:
    CoreHfTokenizer(const TokenizerOptions& options, TokenizerSpec spec);

    HfTokenizer tokenizer_;
    bool include_special_tokens_;
    std::unordered_set<int32_t> special_;  // transformers' all_special_ids
    std::optional<int32_t> unk_;           // unk_token_id
    SpecialIds special_ids_;
    TokenizerIdentity identity_;
    std::vector<std::pair<std::string, int32_t>> additional_;
};

}  // namespace mt::plugins::hf_tokenizer
