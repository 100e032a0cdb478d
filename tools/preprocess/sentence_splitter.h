// Sentence segmentation for --split-sentences, with ICU's sentence BreakIterator (and CLDR's
// abbreviation suppressions) standing in for Megatron's NLTK punkt. Like preprocess_data.py it
// splits texts in chunks of 1,000,000 characters first. One splitter per thread (BreakIterator is
// not thread-safe).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unicode/uversion.h>

U_NAMESPACE_BEGIN
class BreakIterator;
U_NAMESPACE_END

namespace mt::preprocess {

class SentenceSplitter {
  public:
    // `lang`: an NLTK punkt language name ("english", "german", ...) or an ICU locale ("de").
    // keep_newlines keeps each sentence's trailing whitespace (Megatron's --keep-newlines);
    // otherwise sentences are stripped of surrounding whitespace.
    SentenceSplitter(const std::string& lang, bool keep_newlines);
    ~SentenceSplitter();

    // Appends the non-empty sentences of `text` (valid UTF-8) to `out`.
    void split(std::string_view text, std::vector<std::string>& out);

  private:
    void split_chunk(std::string_view chunk, std::vector<std::string>& out);

    std::unique_ptr<icu::BreakIterator> iterator_;
    bool keep_newlines_;
};

// The ICU locale for an NLTK punkt language name (identity for anything else).
std::string icu_locale_for(const std::string& lang);

}  // namespace mt::preprocess
