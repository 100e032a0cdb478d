// Splits text on added tokens before anything else runs, as Hugging Face tokenizers'
// AddedVocabulary does: leftmost-longest matches, lstrip/rstrip taking the white space beside.
// Used by the tokenizer.json pipeline and by core_v0.19's classes over transformers' tokenizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"

namespace mt::text {

// An added token as its splitter sees it.
struct AddedTokenMatch {
    std::string content;  // as it appears in the text being split
    int32_t id = 0;
    bool lstrip = false, rstrip = false;
};

class MT_API AddedTokenSplitter {
  public:
    // The tokens to match (their content as it appears in the text being split).
    explicit AddedTokenSplitter(const std::vector<AddedTokenMatch>& tokens);

    bool empty() const { return tokens_.empty(); }

    struct Segment {
        size_t begin, end;  // byte range in the text
        int32_t id;         // the added token's id, or -1 for plain text
    };
    // Cuts `text` into added tokens and the plain text between them. Empty text gives one
    // empty plain segment; otherwise plain segments are never empty.
    void split(std::string_view text, std::vector<Segment>& out) const;

  private:
    using Entry = AddedTokenMatch;
    std::vector<Entry> tokens_;
    std::vector<uint32_t> by_first_byte_[256];  // indexes into tokens_, longest first
    bool starts_[256] = {};                     // whether some token starts with the byte
};

}  // namespace mt::text
