// BertWordPieceLowerCase / BertWordPieceCase as core_v0.19 builds them (megatron/core/tokenizers:
// MegatronHFTokenizer over transformers' BertTokenizer for "bert-large-(un)cased" with
// --vocab-file): the file's vocabulary alone, [CLS] ... [SEP] around every text, the special
// tokens ([PAD] [UNK] [CLS] [SEP] [MASK], and --tokenizer-special-tokens or, cased,
// <extra_id_0..99>) found in the text first, transformers' clean-up (private-use characters
// dropped, no Final_Sigma) and 100-character words, and its WordPiece decoder.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "basic_tokenizer.h"
#include "bert_vocab.h"
#include "mt/text/added_special_tokens.h"
#include "mt/tokenizer.h"
#include "wordpiece_model.h"

namespace mt::plugins::wordpiece {

class CoreBertWordPieceTokenizer final : public Tokenizer {
  public:
    // Reads options.vocab_file; lower_case selects BertWordPieceLowerCase.
    CoreBertWordPieceTokenizer(const TokenizerOptions& options, bool lower_case);

    // Without --tokenizer-hf-no-include-special-tokens: [CLS] ids [SEP].
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // transformers' WordPiece decoder: a space before each token but "##" continuations, then
    // its clean-up of each token (" ." -> "." and so on); special tokens left out under
    // --tokenizer-hf-no-include-special-tokens.
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return added_.size(); }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override;
    TokenizerIdentity dataset_identity() const override { return identity_; }
    std::vector<std::pair<std::string, int32_t>> additional_special_tokens() const override {
        return additional_;
    }
    std::vector<std::string> vocabulary() const override;

  private:
    const std::string& token_of(int32_t id) const;

    BasicTokenizer basic_;
    BertVocab vocab_;
    WordPieceModel model_;
    text::AddedSpecialTokens added_;
    bool include_special_tokens_;
    SpecialIds special_;
    TokenizerIdentity identity_;
    std::vector<std::pair<std::string, int32_t>> additional_;
};

}  // namespace mt::plugins::wordpiece
