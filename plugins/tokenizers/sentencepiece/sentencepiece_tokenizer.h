// Megatron-LM's SentencePiece tokenizers (megatron/training/tokenizer/tokenizer.py, core_v0.13)
// over libsentencepiece: SentencePieceTokenizer (adds <CLS> <SEP> <EOD> <MASK> and pad/bos/eos
// pieces when the model lacks them, --vocab-extra-ids sentinels, and finds special tokens in
// the text), GPTSentencePieceTokenizer (plain pieces, eod = eos) and Llama2Tokenizer (a BOS
// before every text, eod = eos).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_codec.h"
#include "mt/tokenizer.h"
#include "special_token_split.h"

namespace mt::plugins::sentencepiece {

enum class SentencePieceFlavor { sentencepiece, gpt, llama2 };

// The --tokenizer-type name: SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer.
std::string_view flavor_name(SentencePieceFlavor flavor);

class SentencePieceTokenizer final : public Tokenizer {
  public:
    using Encoder = ModelCodec::Encoder;

    // From --tokenizer-model (and --vocab-extra-ids, which only SentencePieceTokenizer reads);
    // a model that cannot be loaded is an mt::Error naming the file.
    SentencePieceTokenizer(const TokenizerOptions& options, SentencePieceFlavor flavor,
                           Encoder encoder = Encoder::fastest);
    ~SentencePieceTokenizer() override;

    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // Megatron's detokenize; an id outside the vocabulary is an mt::Error.
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return int64_t(pieces_.size()); }
    const SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override { return flavor_name(flavor_); }
    // The class name, [--tokenizer-model as given], vocab_extra_ids (0 for the two subclasses).
    TokenizerIdentity dataset_identity() const override;
    // Whether our BPE encoder encodes (else the library), and why not.
    bool own_encoder() const { return model_.own_encoder(); }
    const std::string& why_library() const { return model_.why_library(); }
    std::vector<std::string> vocabulary() const override { return pieces_; }

  private:
    SentencePieceFlavor flavor_;
    std::string model_file_;
    int64_t vocab_extra_ids_;
    ModelCodec model_;
    std::vector<std::string> pieces_;  // Megatron's inv_vocab: the model's, then the added ones
    SpecialIds special_;
    // SentencePieceTokenizer's special tokens (none for the other two).
    std::vector<std::pair<std::string, int32_t>> special_tokens_;
    SpecialTokenSplit split_;
};

}  // namespace mt::plugins::sentencepiece
