#include "null_tokenizer.h"

#include <limits>

#include "mt/error.h"
#include "python_int.h"

namespace mt::plugins::null {
namespace {

// A piece for an error message: quoted, at most 60 bytes, control bytes escaped.
std::string quoted(std::string_view piece) {
    std::string out = "'";
    const size_t shown = piece.size() > 60 ? 60 : piece.size();
    for (size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<unsigned char>(piece[i]);
        if (c < 0x20 || c == 0x7F) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out += shown < piece.size() ? "'..." : "'";
    return out;
}

}  // namespace

NullTokenizer::NullTokenizer(const TokenizerOptions& options) {
    MT_CHECK(options.vocab_size.has_value(), "NullTokenizer needs --vocab-size");
    const int64_t n = *options.vocab_size;
    MT_CHECK(n >= 0 && n < std::numeric_limits<int32_t>::max(),
             "NullTokenizer: --vocab-size must be in [0, 2^31 - 1), got ", n);
    // Megatron returns -1 for these rather than raising.
    special_.cls = -1;
    special_.sep = -1;
    special_.mask = -1;
    if (options.classes == TokenizerOptions::Classes::core_v0_13) {
        vocab_size_ = n + 1;
        special_.eod = static_cast<int32_t>(n);  // pad, bos and eos raise
        identity_ = {"_NullTokenizer", {std::nullopt}, {{"vocab_size", std::to_string(n)}}};
        return;
    }
    vocab_size_ = n;
    const int64_t eod = options.null_eod_id.value_or(n - 1);
    const int64_t pad = options.null_pad_id;
    for (const int64_t id : {eod, pad})
        MT_CHECK(id >= -1 && id < std::numeric_limits<int32_t>::max(),
                 "NullTokenizer: --null-tokenizer-eod-id and --null-tokenizer-pad-id must be in "
                 "[-1, 2^31 - 1), got ",
                 id);
    special_.eod = static_cast<int32_t>(eod);
    special_.pad = static_cast<int32_t>(pad);
    // (build_tokenizer gives the null types their own metadata: --tokenizer-metadata is unread.)
    identity_ =
        core_v0_19_identity(TokenizerOptions{}, std::nullopt, {{"vocab_size", std::to_string(n)}});
    if (options.null_eod_id) identity_.options.emplace_back("eod_id", std::to_string(eod));
    identity_.options.emplace_back("pad_id", std::to_string(pad));
}

void NullTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    // str.split(' '): every single space separates, so "1  2" has an empty middle piece.
    size_t begin = 0;
    for (size_t index = 0;; ++index) {
        const size_t end = std::min(text.find(' ', begin), text.size());
        const std::string_view piece = text.substr(begin, end - begin);
        const ParsedInt parsed = parse_python_int(piece);
        MT_CHECK(parsed.status != IntParse::kInvalid,
                 "NullTokenizer: invalid literal for int() with base 10: ", quoted(piece),
                 " (piece ", index, " of the text)");
        MT_CHECK(parsed.status != IntParse::kOutOfRange, "NullTokenizer: token id ", quoted(piece),
                 " (piece ", index, " of the text) does not fit in int32");
        out.push_back(parsed.value);
        if (end == text.size()) break;
        begin = end + 1;
    }
}

std::string NullTokenizer::decode(std::span<const int32_t> ids) const {
    std::string text;
    for (size_t k = 0; k < ids.size(); ++k) {
        if (k > 0) text.push_back(' ');
        text += std::to_string(ids[k]);
    }
    return text;
}

}  // namespace mt::plugins::null
