#include "core_sentencepiece_tokenizer.h"

#include "mt/error.h"
#include "mt/text/python_repr.h"
#include "mt/text/utf8.h"

namespace mt::plugins::sentencepiece {

namespace {

// str.isspace() of one character (Unicode's White_Space less U+180E, plus U+001C..U+001F).
bool python_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// str.strip() of valid UTF-8 text.
std::string python_strip(const std::string& text) {
    const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
    const auto* end = begin + text.size();
    const uint8_t* first = begin;
    uint32_t cp = 0;
    while (first < end) {
        const size_t len = text::decode_utf8(first, end, cp);
        if (!len || !python_space(cp)) break;
        first += len;
    }
    const uint8_t* last = end;
    while (last > first) {
        const uint8_t* start = last - 1;
        while (start > first && (*start & 0xC0) == 0x80) --start;
        const size_t len = text::decode_utf8(start, last, cp);
        if (len != size_t(last - start) || !python_space(cp)) break;
        last = start;
    }
    return std::string(reinterpret_cast<const char*>(first), size_t(last - first));
}

}  // namespace

CoreSentencePieceTokenizer::CoreSentencePieceTokenizer(const TokenizerOptions& options,
                                                       SentencePieceFlavor flavor,
                                                       ModelCodec::Encoder encoder)
    : flavor_(flavor),
      options_(options),
      model_(options.tokenizer_model, flavor_name(flavor), encoder),
      pieces_(model_.pieces()),
      split_({}),
      separator_id_(model_.piece_id("\xE2\x96\x81")) {
    const std::string type(flavor_name(flavor));
    MT_CHECK(!options.special_tokens || options.sentencepiece_legacy, "core_v0.19's ", type,
             " takes --tokenizer-special-tokens only with --tokenizer-sentencepiece-legacy "
             "(Megatron: \"Special tokens must be None when legacy is set to False\")");
    MT_CHECK(options.sentencepiece_ignore_extra_whitespaces || !model_.removes_extra_spaces(), type,
             ": not supported yet: --no-tokenizer-sentencepiece-ignore-extra-whitespaces "
             "with a SentencePiece model that removes extra spaces (",
             options.tokenizer_model.substr(0, 300), ")");
    if (!options.sentencepiece_legacy) {
        // The library wrapper's bos_id/eos_id/pad_id; eod falls back to eos; cls, sep and
        // mask raise.
        special_.bos = model_.bos_id();
        special_.eos = model_.eos_id();
        special_.pad = model_.pad_id();
        special_.eod = special_.eos;
        return;
    }
    // add_special_tokens(list): a token the model holds keeps its id; one it does not (its id
    // is the unknown id, "<unk>" itself included) gets the next id once. Legacy mode answers
    // no special ids (they are read from token-name attributes a list never sets).
    for (const std::string& token : options.special_tokens.value_or(std::vector<std::string>{})) {
        MT_CHECK(!token.empty(), "--tokenizer-special-tokens: an empty special token");
        const int32_t piece = model_.piece_id(token);
        bool listed = false;
        for (auto& [text, id] : special_tokens_) listed = listed || text == token;
        if (piece == model_.unk_id()) {
            if (listed) continue;
            const int32_t id = int32_t(pieces_.size());
            pieces_.push_back(token);
            special_tokens_.emplace_back(token, id);
            special_text_[id] = token;
        } else {
            if (!listed) special_tokens_.emplace_back(token, piece);
            special_text_[piece] = token;
        }
    }
    split_ = SpecialTokenSplit(special_tokens_);
}

void CoreSentencePieceTokenizer::encode_append(std::string_view text,
                                               std::vector<int32_t>& out) const {
    if (!options_.sentencepiece_legacy) {
        model_.encode(text, out);
        return;
    }
    // _text_to_ids: a stretch of text between two special tokens drops a leading lone '▁'
    // (trim_spm_separator_after_special_token); the text after the last one keeps it.
    bool after_special = false, segment_after_special = false;
    size_t segment = out.size();
    split_.split(
        text,
        [&](std::string_view piece) {
            segment = out.size();
            segment_after_special = after_special;
            model_.encode(piece, out);
        },
        [&](int32_t id) {
            if (segment_after_special && out.size() > segment && out[segment] == separator_id_)
                out.erase(out.begin() + std::ptrdiff_t(segment));
            out.push_back(id);
            after_special = true;
        });
}

std::string CoreSentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
    if (!options_.sentencepiece_legacy) return model_.decode(ids);
    std::string text;
    size_t last = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const auto special = special_text_.find(ids[i]);
        if (special == special_text_.end()) continue;
        text += model_.decode(ids.subspan(last, i - last)) + " " + special->second + " ";
        last = i + 1;
    }
    return python_strip(text + model_.decode(ids.subspan(last)));
}

TokenizerIdentity CoreSentencePieceTokenizer::dataset_identity() const {
    return core_v0_19_identity(
        options_, options_.tokenizer_model,
        {{"chat_template", "None"},
         {"ignore_extra_whitespaces",
          text::python_bool(options_.sentencepiece_ignore_extra_whitespaces)},
         {"legacy", text::python_bool(options_.sentencepiece_legacy)},
         {"special_tokens", options_.special_tokens ? text::python_repr(*options_.special_tokens)
                                                    : std::string("None")}});
}

}  // namespace mt::plugins::sentencepiece
