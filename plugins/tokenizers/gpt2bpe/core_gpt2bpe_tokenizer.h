// GPT2BPETokenizer as core_v0.19 builds it (megatron/core/tokenizers: MegatronHFTokenizer over
// transformers' GPT-2 tokenizer from --vocab-file and --merge-file): GPT-2's BPE, with
// <|endoftext|> and --tokenizer-special-tokens found in the text as special tokens first (a
// token the vocabulary lacks gets the next id), and decode leaving them out under
// --tokenizer-hf-no-include-special-tokens.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpt2bpe_tokenizer.h"
#include "mt/text/added_special_tokens.h"
#include "mt/tokenizer.h"

namespace mt::plugins::gpt2bpe {

class CoreGpt2BpeTokenizer final : public Tokenizer {
  public:
    explicit CoreGpt2BpeTokenizer(const TokenizerOptions& options);

    // Throws mt::Error (and leaves `out` as it was) when `text` is not valid UTF-8.
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return added_.size(); }
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string_view name() const override { return "GPT2BPETokenizer"; }
    TokenizerIdentity dataset_identity() const override { return identity_; }
    std::vector<std::pair<std::string, int32_t>> additional_special_tokens() const override {
        return additional_;
    }
    // <|endoftext|> is GPT-2's unknown token.
    int32_t token_to_id(std::string_view token) const override;
    std::string decode_without_special_tokens(std::span<const int32_t> ids) const override;

  private:
    CoreGpt2BpeTokenizer(const TokenizerOptions& options, const std::vector<VocabEntry>& vocab);
    // The ids' text (convert_tokens_to_string), without the special tokens' when asked.
    std::string text_of(std::span<const int32_t> ids, bool drop_special) const;

    Gpt2BpeTokenizer bpe_;
    text::AddedSpecialTokens added_;
    bool include_special_tokens_;
    SpecialIds special_ids_;
    TokenizerIdentity identity_;
    std::vector<std::pair<std::string, int32_t>> additional_;
    std::unordered_map<std::string, int32_t> vocab_ids_;  // vocab.json's token -> id
};

}  // namespace mt::plugins::gpt2bpe
