#include "sentencepiece_tokenizer.h"

#include <map>
#include <optional>

#include "mt/error.h"

namespace mt::plugins::sentencepiece {

std::string_view flavor_name(SentencePieceFlavor flavor) {
    switch (flavor) {
        case SentencePieceFlavor::sentencepiece:
            return "SentencePieceTokenizer";
        case SentencePieceFlavor::gpt:
            return "GPTSentencePieceTokenizer";
        case SentencePieceFlavor::llama2:
            return "Llama2Tokenizer";
    }
    return "";
}

SentencePieceTokenizer::SentencePieceTokenizer(const TokenizerOptions& options,
                                               SentencePieceFlavor flavor, Encoder encoder)
    : flavor_(flavor),
      model_file_(options.tokenizer_model),
      vocab_extra_ids_(flavor == SentencePieceFlavor::sentencepiece ? options.vocab_extra_ids : 0),
      model_(options.tokenizer_model, flavor_name(flavor), encoder),
      pieces_(model_.pieces()),
      split_({}) {
    std::map<std::string, int32_t> vocab;  // Megatron's _vocab
    for (size_t i = 0; i < pieces_.size(); ++i) vocab.emplace(pieces_[i], int32_t(i));
    if (flavor == SentencePieceFlavor::gpt) {
        special_.pad = model_.pad_id();
        special_.bos = model_.bos_id();
        special_.eos = model_.eos_id();
        special_.eod = special_.eos;
        return;
    }
    if (flavor == SentencePieceFlavor::llama2) {
        // _Llama2Tokenizer keeps bos_id / eos_id / pad_id as its own attributes; its pad, bos
        // and eos properties (the base class's) raise, only eod answers (eos).
        MT_CHECK(model_.bos_id(), "Llama2Tokenizer: the SentencePiece model ",
                 model_file_.substr(0, 300), " has no bos piece to put before each text");
        special_.eod = model_.eos_id();
        return;
    }
    // _SentencePieceTokenizer._initalize: each special token is the model's piece of that text
    // or a new id after the vocabulary; pad/bos/eos use the model's piece when it has one.
    auto add = [&](const std::string& token) {
        auto [it, added] = vocab.emplace(token, int32_t(pieces_.size()));
        if (added) pieces_.push_back(token);
        bool listed = false;
        for (const auto& t : special_tokens_) listed = listed || t.first == token;
        if (!listed) special_tokens_.emplace_back(token, it->second);
        return it->second;
    };
    auto piece_or = [&](std::optional<int32_t> id, const char* fallback) {
        return id ? pieces_[size_t(*id)] : std::string(fallback);
    };
    special_.cls = add("<CLS>");
    special_.sep = add("<SEP>");
    special_.eod = add("<EOD>");
    special_.mask = add("<MASK>");
    special_.pad = add(piece_or(model_.pad_id(), "<PAD>"));
    special_.bos = add(piece_or(model_.bos_id(), "<BOS>"));
    special_.eos = add(piece_or(model_.eos_id(), "<EOS>"));
    for (int64_t i = 0; i < vocab_extra_ids_; ++i) add("<extra_id_" + std::to_string(i) + ">");
    split_ = SpecialTokenSplit(special_tokens_);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

void SentencePieceTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    switch (flavor_) {
        case SentencePieceFlavor::gpt:
            model_.encode(text, out);
            return;
        case SentencePieceFlavor::llama2:  // _Llama2Tokenizer.tokenize(s, bos=True, eos=False)
            out.push_back(*model_.bos_id());
            model_.encode(text, out);
            return;
        case SentencePieceFlavor::sentencepiece:
            split_.split(
                text, [&](std::string_view piece) { model_.encode(piece, out); },
                [&](int32_t id) { out.push_back(id); });
            return;
    }
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
    if (flavor_ != SentencePieceFlavor::sentencepiece) return model_.decode(ids);
    // _SentencePieceTokenizer.detokenize: each special token between spaces.
    std::string text;
    size_t last = 0;
    for (size_t i = 0; i < ids.size(); ++i)
        for (const auto& [token, id] : special_tokens_)
            if (id == ids[i]) {
                text += model_.decode(ids.subspan(last, i - last)) + " " + token + " ";
                last = i + 1;
                break;
            }
    return text + model_.decode(ids.subspan(last));
}

TokenizerIdentity SentencePieceTokenizer::dataset_identity() const {
    std::string class_name = "_" + std::string(name());
    // Megatron's class names: _SentencePieceTokenizer, _GPTSentencePieceTokenizer,
    // _Llama2Tokenizer.
    return {class_name, {model_file_}, {{"vocab_extra_ids", std::to_string(vocab_extra_ids_)}}};
}

}  // namespace mt::plugins::sentencepiece
