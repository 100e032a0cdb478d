// BertWordPieceTokenizer: Megatron-LM's _BertWordPieceTokenizer (BertWordPieceLowerCase and
// BertWordPieceCase): BasicTokenizer + WordPiece over a vocab.txt, with [BOS], [EOS] and the
// --vocab-extra-ids sentinels appended to the vocabulary as Megatron appends them.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "basic_tokenizer.h"
#include "bert_vocab.h"
#include "mt/tokenizer.h"
#include "wordpiece_model.h"

namespace mt::plugins::wordpiece {

class BertWordPieceTokenizer final : public Tokenizer {
  public:
    // Reads options.vocab_file; lower_case selects BertWordPieceLowerCase.
    BertWordPieceTokenizer(const TokenizerOptions& options, bool lower_case);

    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // Megatron's decode(): tokens joined by spaces, " ##" removed, stripped, then
    // convert_tokens_to_string's clean-up of spaces before punctuation and contractions.
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return vocab_.size(); }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override;
    // _BertWordPieceTokenizer [vocab_file], lower_case, vocab_extra_ids.
    TokenizerIdentity dataset_identity() const override { return identity_; }
    std::vector<std::string> vocabulary() const override;

    const BertVocab& vocab() const { return vocab_; }
    const BasicTokenizer& basic() const { return basic_; }
    const WordPieceModel& model() const { return model_; }

  private:
    // The file's vocabulary with [BOS], [EOS] and <extra_id_N> appended.
    static BertVocab build_vocab(const TokenizerOptions& options, bool lower_case);
    static SpecialIds special_ids_of(const BertVocab& vocab);

    BasicTokenizer basic_;
    BertVocab vocab_;
    SpecialIds special_;
    WordPieceModel model_;
    TokenizerIdentity identity_;
};

}  // namespace mt::plugins::wordpiece
