// SentencePiece's BPE encoding (bpe_model.cc SampleEncode with its identity normalizer) on the
// project's one BPE merge engine (mt/text/bpe_merges.h), for the models it can encode exactly:
// Llama-2's and Mistral's layout (BPE, no normalization rules, dummy prefix, byte fallback).
// The text is cut before each U+2581 that follows another character when no piece spans such
// a place, and each piece of text is merged once per thread (a word cache), which is where its
// speed comes from. Other models are encoded by libsentencepiece itself.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model_proto.h"
#include "mt/text/bpe_merges.h"

namespace mt::plugins::sentencepiece {

class BpeEncoder {
  public:
    // The encoder of `model`, or nullopt with the reason in `why_not` when the model is one it
    // does not encode exactly (another model type, normalization rules, unused pieces, ...).
    static std::optional<BpeEncoder> build(const SentencePieceModel& model, std::string* why_not);

    // SentencePieceProcessor::Encode's ids of `text`.
    void encode(std::string_view text, std::vector<int32_t>& out) const;

  private:
    BpeEncoder() = default;

    // Appends the ids of one stretch of normalized text that no merge crosses.
    void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
    // The id of a one-character piece, or -1.
    int32_t char_id(std::string_view ch) const;
    // Appends the ids SentencePiece gives a character no piece holds (its bytes' pieces with byte
    // fallback, else <unk>).
    void append_unknown(std::string_view ch, std::vector<int32_t>& out) const;

    std::shared_ptr<const text::BpeMerges> merges_;
    int32_t ascii_ids_[128];
    std::unordered_map<std::string, int32_t> char_ids_;
    // User-defined pieces: matched whole (longest first) and never merged.
    std::vector<std::pair<std::string, int32_t>> user_defined_;
    bool user_defined_first_byte_[256] = {};  // a user-defined piece starts with this byte
    int32_t byte_ids_[256];
    int32_t unknown_id_ = -1;
    int64_t vocab_size_ = 0;
    bool byte_fallback_ = false;
    bool add_dummy_prefix_ = true;
    bool cut_at_spaces_ = false;  // no piece holds U+2581 after another character
    uint64_t cache_owner_ = 0;
};

}  // namespace mt::plugins::sentencepiece
