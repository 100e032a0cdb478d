// Stand-ins for the characters PCRE2's Unicode tables class otherwise than tiktoken's and
// tokenizers' (those assigned after PCRE2's Unicode version): the regex runs on a copy of the
// text holding, in their place, characters of the same general category and UTF-8 length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt::text::detail {

class UnicodeStandIns {
  public:
    // For the PCRE2 this process runs with: empty when it knows the references' Unicode
    // version; an mt::Error for a version without a table (gen_unicode_stand_ins.py).
    static const UnicodeStandIns& for_linked_pcre2();

    bool empty() const { return ranges_.empty(); }
    // The offset of the first character of `text` (valid UTF-8) that needs a stand-in, or npos.
    size_t first_needing(std::string_view text) const;
    // The code point at `at` in text (one that needs a stand-in), for messages.
    static uint32_t code_point_at(std::string_view text, size_t at);
    // Puts the stand-ins in, from offset `from` on; lengths do not change.
    void replace(std::string& text, size_t from) const;

  private:
    struct Range {
        uint32_t first, last, stand_in;
    };
    explicit UnicodeStandIns(bool needed);
    // The stand-in of cp, or 0.
    uint32_t stand_in(uint32_t cp) const;

    std::vector<Range> ranges_;
    std::vector<bool> block_;  // per 256 code points: some of them need a stand-in
};

}  // namespace mt::text::detail
