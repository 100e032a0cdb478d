// ByteTokenizer: an example out-of-tree tokenizer plugin (docs/plugins.md). Each byte of the
// UTF-8 text is one token (ids 0-255), the end-of-document id is 256; decode joins the bytes.
#pragma once

#include <mt/tokenizer.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mt {
class Registry;
}

namespace mt_example {

class ByteTokenizer final : public mt::Tokenizer {
  public:
    ByteTokenizer();

    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // An mt::Error for an id that is not a byte (e.g. the end-of-document id).
    std::string decode(std::span<const int32_t> ids) const override;
    int64_t vocab_size() const override { return 257; }
    const mt::SpecialIds& special_ids() const override { return special_; }
    std::string_view name() const override { return "ByteTokenizer"; }

  private:
    mt::SpecialIds special_;
};

// Registers "ByteTokenizer" (what --tokenizer-type names); called by the plugin entry.
void register_byte_tokenizer(mt::Registry& registry);

}  // namespace mt_example
