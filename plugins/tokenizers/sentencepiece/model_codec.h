// A SentencePiece model's plain encode and decode, as the `sentencepiece` package gives them to
// Megatron's classes of either version: our BPE encoder where it encodes the model exactly
// (Llama-2's and Mistral's layout), else libsentencepiece; decoding always by the library.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpe_encoder.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mt::plugins::sentencepiece {

class ModelCodec {
  public:
    // `library`: always the library (tests hold both encoders to the same references).
    enum class Encoder { fastest, library };

    // Loads `file`; a model that cannot be loaded is an mt::Error naming `owner` (the
    // --tokenizer-type) and the file.
    ModelCodec(const std::string& file, std::string_view owner, Encoder encoder);
    ~ModelCodec();

    // SentencePieceProcessor::Encode's ids of `text`, appended.
    void encode(std::string_view text, std::vector<int32_t>& out) const;
    // SentencePieceProcessor::Decode; an id outside the model is an mt::Error.
    std::string decode(std::span<const int32_t> ids) const;

    int64_t size() const { return int64_t(pieces_.size()); }
    const std::vector<std::string>& pieces() const { return pieces_; }
    // The model's bos/eos/pad ids; nullopt where it has none (the library's -1).
    std::optional<int32_t> bos_id() const;
    std::optional<int32_t> eos_id() const;
    std::optional<int32_t> pad_id() const;
    int32_t unk_id() const;
    // PieceToId: the piece's id, the unknown id where the model has no such piece.
    int32_t piece_id(const std::string& piece) const;
    // Whether encoding drops runs of spaces ("x  y" gives the pieces of "x y"), as core_v0.19's
    // wrapper tests it.
    bool removes_extra_spaces() const;

    bool own_encoder() const { return own_encoder_.has_value(); }
    // Why the library encodes, where it does.
    const std::string& why_library() const { return why_library_; }

  private:
    std::string owner_;
    std::unique_ptr<::sentencepiece::SentencePieceProcessor> processor_;
    std::optional<BpeEncoder> own_encoder_;
    std::vector<std::string> pieces_;
    std::string why_library_;
};

}  // namespace mt::plugins::sentencepiece
