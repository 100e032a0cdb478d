// The BPE model of a Hugging Face tokenizer.json (tokenizers' models::bpe): vocab, merge ranks
// over token ids in the shared merge engine, unknown characters, byte fallback, ignore_merges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mt/text/bpe_merges.h"
#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

class BpeModel {
  public:
    // With `byte_level`, pieces arrive as raw bytes that stand for GPT-2's byte characters
    // (the ByteLevel pre-tokenizer's output), otherwise as UTF-8 text. `source` names the file.
    BpeModel(const BpeSpec& spec, bool byte_level, const std::string& source);

    // Appends the ids of one pre-tokenized piece (valid UTF-8 unless byte_level).
    void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

    // Whether cutting a piece before every run of `marker` (a one-character token) leaves the
    // ids unchanged: no merge makes a token with the marker right after another character, so
    // no merge crosses such a cut, and the marker itself is known (no unk fuses across it).
    bool cuts_before_runs_of(const std::string& marker) const;

    std::optional<int32_t> token_to_id(const std::string& token) const;
    // The vocab's token for id, or nullptr.
    const std::string* id_to_token(int32_t id) const {
        return id >= 0 && size_t(id) < tokens_.size() && has_token_[size_t(id)]
                   ? &tokens_[size_t(id)]
                   : nullptr;
    }
    const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

  private:
    // The merges over vocab ids, checked against the vocab (ids are the engine's symbols).
    static std::vector<text::BpeMerges::Merge> merges_of(
        const BpeSpec& spec, const std::unordered_map<std::string, int32_t>& vocab,
        const std::string& source);
    // The initial symbols of a piece: one per character (byte), byte fallback, unknowns.
    void initial_symbols(std::string_view piece, std::vector<uint32_t>& syms) const;

    bool byte_level_;
    std::unordered_map<std::string, int32_t> vocab_;        // token text -> id
    std::unordered_map<std::string, int32_t> piece_vocab_;  // piece (raw bytes if byte_level) -> id
    std::vector<std::string> tokens_;                       // id -> token text
    std::vector<bool> has_token_;
    std::unordered_map<uint32_t, int32_t> char_id_;  // code point -> id of that one-character token
    int32_t ascii_id_[128];                          // the same for ASCII (or byte characters)
    int32_t byte_id_[256];                           // byte_level: id of each byte's character
    int32_t fallback_id_[256];                       // "<0xAB>" tokens, -1 where absent
    std::optional<int32_t> unk_id_;
    bool fuse_unk_, byte_fallback_, ignore_merges_;
    // tokenizers' Word::merge_all: the leftmost lowest-ranked pair first.
    text::BpeMerges merges_;
};

}  // namespace mt::plugins::hf_tokenizer
