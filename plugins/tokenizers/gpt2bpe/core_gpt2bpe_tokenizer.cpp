#include "core_gpt2bpe_tokenizer.h"

#include "mt/error.h"
#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"

namespace mt::plugins::gpt2bpe {
namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

std::vector<std::string> special_tokens(const TokenizerOptions& options) {
    std::vector<std::string> tokens{std::string(kEndOfText)};
    if (options.special_tokens)
        tokens.insert(tokens.end(), options.special_tokens->begin(), options.special_tokens->end());
    return tokens;
}

// transformers' ByteLevel decoding of a token past the vocabulary: its byte-level characters'
// bytes, or its own UTF-8 when one character is not a byte-level one.
void append_added_bytes(const std::string& token, std::string& out) {
    std::string bytes;
    const auto* p = reinterpret_cast<const uint8_t*>(token.data());
    const auto* end = p + token.size();
    while (p < end) {
        uint32_t cp = 0;
        const size_t len = text::decode_utf8(p, end, cp);
        const int byte = len == 0 ? -1 : text::kByteLevel.byte_of(cp);
        if (byte < 0) {
            out += token;
            return;
        }
        bytes.push_back(char(byte));
        p += len;
    }
    out += bytes;
}

}  // namespace

CoreGpt2BpeTokenizer::CoreGpt2BpeTokenizer(const TokenizerOptions& options)
    : CoreGpt2BpeTokenizer(options, read_vocab_json(options.vocab_file)) {}

CoreGpt2BpeTokenizer::CoreGpt2BpeTokenizer(const TokenizerOptions& options,
                                           const std::vector<VocabEntry>& vocab)
    : bpe_(vocab, read_merges_txt(options.merge_file), options.vocab_file),
      added_(
          special_tokens(options),
          [&vocab](std::string_view token) {
              int32_t id = -1;  // json.load: a repeated key keeps its last id
              for (const VocabEntry& e : vocab)
                  if (e.token == token) id = e.id;
              return id;
          },
          bpe_.vocab_size()),
      include_special_tokens_(options.hf_include_special_tokens) {
    // transformers' GPT-2 has <|endoftext|> as bos, eos and unk; core_v0.19 makes it sep and
    // cls too.
    const int32_t eot = added_.id(kEndOfText);
    special_ids_.eod = special_ids_.bos = special_ids_.eos = special_ids_.sep = special_ids_.cls =
        eot;
    const std::vector<std::string> additional =
        options.special_tokens.value_or(std::vector<std::string>{});
    identity_ = core_v0_19_identity(options, std::string(name()),
                                    transformers_kwargs(options, additional, false));
    for (const std::string& token : additional) additional_.emplace_back(token, added_.id(token));
    for (const VocabEntry& e : vocab) vocab_ids_[e.token] = e.id;  // (a repeated key: the last)
}

int32_t CoreGpt2BpeTokenizer::token_to_id(std::string_view token) const {
    for (const auto& [text, id] : additional_)
        if (text == token) return id;
    if (token == kEndOfText) return added_.id(kEndOfText);
    const auto it = vocab_ids_.find(std::string(token));
    return it != vocab_ids_.end() ? it->second : added_.id(kEndOfText);
}

std::string CoreGpt2BpeTokenizer::decode_without_special_tokens(
    std::span<const int32_t> ids) const {
    return text_of(ids, true);
}

void CoreGpt2BpeTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    const size_t start = out.size();
    try {
        added_.encode(text, out, [this](std::string_view piece, std::vector<int32_t>& ids) {
            bpe_.encode_append(piece, ids);
        });
    } catch (...) {
        out.resize(start);  // as GPT-2's own encoder leaves it
        throw;
    }
}

std::string CoreGpt2BpeTokenizer::decode(std::span<const int32_t> ids) const {
    return text_of(ids, !include_special_tokens_);
}

std::string CoreGpt2BpeTokenizer::text_of(std::span<const int32_t> ids, bool drop_special) const {
    std::string bytes;
    for (const int32_t id : ids) {
        if (drop_special && added_.is_special(id)) continue;
        if (const std::string* token = added_.added(id))
            append_added_bytes(*token, bytes);
        else
            bpe_.append_token_bytes(id, bytes);
    }
    std::string text;
    text.reserve(bytes.size());
    text::append_replacing_invalid(text, bytes);
    return text;
}

}  // namespace mt::plugins::gpt2bpe
