// Splits text on a tokenizer.json's added tokens before anything else runs, as tokenizers'
// AddedVocabulary does: leftmost-longest matches, lstrip/rstrip taking the white space beside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

class AddedTokenSplitter {
  public:
    // The tokens to match (their content as it appears in the text being split).
    explicit AddedTokenSplitter(const std::vector<AddedToken>& tokens);

    bool empty() const { return tokens_.empty(); }

    struct Segment {
        size_t begin, end;  // byte range in the text
        int32_t id;         // the added token's id, or -1 for plain text
    };
    // Cuts `text` into added tokens and the plain text between them. Empty text gives one
    // empty plain segment; otherwise plain segments are never empty.
    void split(std::string_view text, std::vector<Segment>& out) const;

  private:
    struct Entry {
        std::string content;
        int32_t id;
        bool lstrip, rstrip;
    };
    std::vector<Entry> tokens_;
    std::vector<uint32_t> by_first_byte_[256];  // indexes into tokens_, longest first
    bool starts_[256] = {};                     // whether some token starts with the byte
};

}  // namespace mt::plugins::hf_tokenizer
