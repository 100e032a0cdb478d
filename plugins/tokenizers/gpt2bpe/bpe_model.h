// GPT-2's byte-level BPE over interned symbols: merges.txt's ranks in the shared merge engine
// (Megatron's GPT2Tokenizer.bpe() order), and symbol -> vocab id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpe_files.h"
#include "mt/text/bpe_merges.h"

namespace mt::plugins::gpt2bpe {

class BpeModel {
  public:
    // Symbols 0..255 are the 256 one-byte characters; every string named by a merge (its two
    // parts and their concatenation) gets a symbol too, whether or not the vocab has it.
    BpeModel(const std::vector<VocabEntry>& vocab, const std::vector<MergeRule>& merges);

    // Appends the ids of one pre-tokenised piece given as its UTF-8 bytes. A merged string the
    // vocab lacks becomes id 0, as Megatron's encoder.get(token, 0) does.
    void encode_piece(const uint8_t* bytes, size_t n, std::vector<int32_t>& out) const;

    const text::BpeMerges& merges() const { return merges_; }
    int32_t symbol_id(uint32_t sym) const { return symbol_id_[sym]; }
    size_t symbol_count() const { return symbol_id_.size(); }

  private:
    // The merges over interned symbols, and each symbol's string.
    struct Interned {
        std::vector<text::BpeMerges::Merge> merges;
        std::vector<std::string> names;
    };
    static Interned intern(const std::vector<MergeRule>& merges);
    BpeModel(const std::vector<VocabEntry>& vocab, const Interned& interned);

    text::BpeMerges merges_;
    std::vector<int32_t> symbol_id_;  // symbol -> vocab id
};

}  // namespace mt::plugins::gpt2bpe
