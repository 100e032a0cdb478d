#include "sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <map>
#include <optional>

#include "mt/error.h"

namespace mt::plugins::sentencepiece {

namespace {

// An id SentencePiece reports as absent (-1) is one Megatron's classes return as -1 or turn
// into an added token; here "none".
std::optional<int32_t> present(int id) {
    return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

}  // namespace

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
      processor_(std::make_unique<::sentencepiece::SentencePieceProcessor>()),
      split_({}) {
    const std::string name(flavor_name(flavor));
    MT_CHECK(!model_file_.empty(), name, " needs --tokenizer-model (a SentencePiece .model file)");
    const auto status = processor_->Load(model_file_);
    MT_CHECK(status.ok(), name, ": cannot load the SentencePiece model ",
             model_file_.substr(0, 300), ": ", status.ToString().substr(0, 300));
    model_pieces_ = processor_->GetPieceSize();
    if (encoder == Encoder::fastest)
        own_encoder_ = BpeEncoder::build(
            read_model_proto(processor_->serialized_model_proto(), model_file_), &why_library_);
    else
        why_library_ = "asked for";
    std::map<std::string, int32_t> vocab;  // Megatron's _vocab
    for (int i = 0; i < model_pieces_; ++i) {
        pieces_.push_back(processor_->IdToPiece(i));
        vocab.emplace(pieces_.back(), i);
    }
    if (flavor == SentencePieceFlavor::gpt) {
        special_.pad = present(processor_->pad_id());
        special_.bos = present(processor_->bos_id());
        special_.eos = present(processor_->eos_id());
        special_.eod = special_.eos;
        return;
    }
    if (flavor == SentencePieceFlavor::llama2) {
        // _Llama2Tokenizer keeps bos_id / eos_id / pad_id as its own attributes; its pad, bos
        // and eos properties (the base class's) raise, only eod answers (eos).
        special_.eod = present(processor_->eos_id());
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
    auto piece_or = [&](int id, const char* fallback) {
        return id >= 0 && id < model_pieces_ ? pieces_[size_t(id)] : std::string(fallback);
    };
    special_.cls = add("<CLS>");
    special_.sep = add("<SEP>");
    special_.eod = add("<EOD>");
    special_.mask = add("<MASK>");
    special_.pad = add(piece_or(processor_->pad_id(), "<PAD>"));
    special_.bos = add(piece_or(processor_->bos_id(), "<BOS>"));
    special_.eos = add(piece_or(processor_->eos_id(), "<EOS>"));
    for (int64_t i = 0; i < vocab_extra_ids_; ++i) add("<extra_id_" + std::to_string(i) + ">");
    split_ = SpecialTokenSplit(special_tokens_);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

void SentencePieceTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
    if (own_encoder_) {
        own_encoder_->encode(text, out);
        return;
    }
    std::vector<int> ids;
    const auto status = processor_->Encode(text, &ids);
    MT_CHECK(status.ok(), name(), ": SentencePiece could not encode a text of ", text.size(),
             " bytes: ", status.ToString().substr(0, 300));
    out.insert(out.end(), ids.begin(), ids.end());
}

void SentencePieceTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    switch (flavor_) {
        case SentencePieceFlavor::gpt:
            encode_plain(text, out);
            return;
        case SentencePieceFlavor::llama2:  // _Llama2Tokenizer.tokenize(s, bos=True, eos=False)
            out.push_back(int32_t(processor_->bos_id()));
            encode_plain(text, out);
            return;
        case SentencePieceFlavor::sentencepiece:
            split_.split(
                text, [&](std::string_view piece) { encode_plain(piece, out); },
                [&](int32_t id) { out.push_back(id); });
            return;
    }
}

std::string SentencePieceTokenizer::decode_plain(std::span<const int32_t> ids) const {
    for (const int32_t id : ids)
        MT_CHECK(id >= 0 && id < model_pieces_, name(), ": id ", id,
                 " is not in the SentencePiece model's ", model_pieces_, " pieces");
    std::string text;
    const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    MT_CHECK(status.ok(), name(),
             ": SentencePiece could not decode: ", status.ToString().substr(0, 300));
    return text;
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
    if (flavor_ != SentencePieceFlavor::sentencepiece) return decode_plain(ids);
    // _SentencePieceTokenizer.detokenize: each special token between spaces.
    std::string text;
    size_t last = 0;
    for (size_t i = 0; i < ids.size(); ++i)
        for (const auto& [token, id] : special_tokens_)
            if (id == ids[i]) {
                text += decode_plain(ids.subspan(last, i - last)) + " " + token + " ";
                last = i + 1;
                break;
            }
    return text + decode_plain(ids.subspan(last));
}

TokenizerIdentity SentencePieceTokenizer::dataset_identity() const {
    std::string class_name = "_" + std::string(name());
    // Megatron's class names: _SentencePieceTokenizer, _GPTSentencePieceTokenizer,
    // _Llama2Tokenizer.
    return {class_name, {model_file_}, {{"vocab_extra_ids", std::to_string(vocab_extra_ids_)}}};
}

}  // namespace mt::plugins::sentencepiece
