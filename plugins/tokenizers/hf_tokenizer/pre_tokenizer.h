// The text pipeline of tokenizer.json between added-token splitting and the BPE model: the
// normalizer (Prepend, Replace, NFC/NFD/NFKC/NFKD) and the pre-tokenizers (Metaspace, ByteLevel,
// Split with any regex or string and every behavior), producing the pieces BPE encodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "mt/text/regex_splitter.h"
#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

// Applies the normalizer steps to `text` (valid UTF-8).
std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text);

class PreTokenizer {
  public:
    explicit PreTokenizer(std::vector<PreTokenizerStep> steps);

    // Whether the pieces are raw bytes standing for GPT-2's byte characters (a ByteLevel step).
    bool byte_level() const { return byte_level_; }

    // Cuts one normalized segment (valid UTF-8) into pieces. `at_start`: the segment begins the
    // text (Metaspace's prepend_scheme "first"). `pieces` is cleared first; they view `segment`
    // or this thread's storage, valid until the thread's next run().
    void run(std::string_view segment, bool at_start, std::vector<std::string_view>& pieces) const;

  private:
    void apply(const PreTokenizerStep& step, std::string_view piece, bool first,
               std::vector<std::string_view>& out) const;

    std::vector<PreTokenizerStep> steps_;
    bool byte_level_ = false;
    text::RegexSplitter byte_level_regex_;  // what ByteLevel's use_regex splits with
};

}  // namespace mt::plugins::hf_tokenizer
