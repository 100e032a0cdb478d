// Megatron core_v0.19's SentencePiece tokenizers (megatron/core/tokenizers): every
// SentencePiece --tokenizer-type builds DefaultTokenizerText over the library wrapper
// (text/libraries/sentencepiece_tokenizer.py), which encodes plain pieces (no bos, no added
// tokens) with eod = eos, or, with --tokenizer-sentencepiece-legacy, finds
// --tokenizer-special-tokens in the text and answers no special ids.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model_codec.h"
#include "mt/tokenizer.h"
#include "sentencepiece_tokenizer.h"
#include "special_token_split.h"

namespace mt::plugins::sentencepiece {

class CoreSentencePieceTokenizer final : public Tokenizer {
  public:
    // From --tokenizer-model, --tokenizer-sentencepiece-legacy, --tokenizer-special-tokens and
    // --no-tokenizer-sentencepiece-ignore-extra-whitespaces; what Megatron refuses (special
    // tokens without legacy) is an mt::Error.
    CoreSentencePieceTokenizer(const TokenizerOptions& options, SentencePieceFlavor flavor,
                               ModelCodec::Encoder encoder = ModelCodec::Encoder::fastest);

    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // ids_to_text: legacy mode puts each special token between spaces and strips the result.
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return int64_t(pieces_.size()); }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override { return flavor_name(flavor_); }
    // DefaultTokenizerText's: the class path, --tokenizer-model as given (a string), and
    // chat_template, ignore_extra_whitespaces, legacy and special_tokens as str() writes them.
    TokenizerIdentity dataset_identity() const override;
    std::vector<std::string> vocabulary() const override { return pieces_; }
    bool own_encoder() const { return model_.own_encoder(); }

  private:
    SentencePieceFlavor flavor_;
    TokenizerOptions options_;
    ModelCodec model_;
    std::vector<std::string> pieces_;  // the model's, then the added special tokens
    SpecialIds special_;
    std::vector<std::pair<std::string, int32_t>> special_tokens_;  // legacy: insertion order
    std::map<int32_t, std::string> special_text_;                  // id_to_special_token
    SpecialTokenSplit split_;
    int32_t separator_id_;  // piece_to_id('▁'), dropped after a special token
};

}  // namespace mt::plugins::sentencepiece
