#include "model_codec.h"

#include <sentencepiece_processor.h>

#include "mt/error.h"
#include "mt/io/mapped_file.h"

namespace mt::plugins::sentencepiece {

namespace {

std::optional<int32_t> present(int id) {
    return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

}  // namespace

ModelCodec::ModelCodec(const std::string& file, std::string_view owner, Encoder encoder)
    : owner_(owner), processor_(std::make_unique<::sentencepiece::SentencePieceProcessor>()) {
    MT_CHECK(!file.empty(), owner_, " needs --tokenizer-model (a SentencePiece .model file)");
    io::MappedFile bytes;
    SentencePieceModel model;
    try {
        bytes = io::MappedFile(file);
        // Read by our reader first: libsentencepiece cannot index a piece holding a NUL byte
        // (its Darts trie throws where nothing catches: the process ends); no trainer writes one.
        model = read_model_proto(bytes.bytes(), file);
        for (size_t i = 0; i < model.pieces.size(); ++i)
            MT_CHECK(model.pieces[i].text.find('\0') == std::string::npos, "piece ", i,
                     " holds a NUL byte, which SentencePiece cannot index");
    } catch (const Error& e) {
        MT_FAIL(owner_, ": cannot load the SentencePiece model ", file.substr(0, 300), ": ",
                std::string(e.what()).substr(0, 300));
    }
    const auto status = processor_->LoadFromSerializedProto(bytes.bytes());
    MT_CHECK(status.ok(), owner_, ": cannot load the SentencePiece model ", file.substr(0, 300),
             ": ", status.ToString().substr(0, 300));
    for (int i = 0; i < processor_->GetPieceSize(); ++i)
        pieces_.push_back(processor_->IdToPiece(i));
    if (encoder == Encoder::fastest)
        own_encoder_ = BpeEncoder::build(model, &why_library_);
    else
        why_library_ = "asked for";
}

ModelCodec::~ModelCodec() = default;

void ModelCodec::encode(std::string_view text, std::vector<int32_t>& out) const {
    if (own_encoder_) {
        own_encoder_->encode(text, out);
        return;
    }
    std::vector<int> ids;
    const auto status = processor_->Encode(text, &ids);
    MT_CHECK(status.ok(), owner_, ": SentencePiece could not encode a text of ", text.size(),
             " bytes: ", status.ToString().substr(0, 300));
    out.insert(out.end(), ids.begin(), ids.end());
}

std::string ModelCodec::decode(std::span<const int32_t> ids) const {
    for (const int32_t id : ids)
        MT_CHECK(id >= 0 && id < size(), owner_, ": id ", id,
                 " is not in the SentencePiece model's ", size(), " pieces");
    std::string text;
    const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    MT_CHECK(status.ok(), owner_,
             ": SentencePiece could not decode: ", status.ToString().substr(0, 300));
    return text;
}

std::optional<int32_t> ModelCodec::bos_id() const {
    return present(processor_->bos_id());
}
std::optional<int32_t> ModelCodec::eos_id() const {
    return present(processor_->eos_id());
}
std::optional<int32_t> ModelCodec::pad_id() const {
    return present(processor_->pad_id());
}
int32_t ModelCodec::unk_id() const {
    return processor_->unk_id();
}

int32_t ModelCodec::piece_id(const std::string& piece) const {
    return processor_->PieceToId(piece);
}

bool ModelCodec::removes_extra_spaces() const {
    std::vector<std::string> two, one;
    MT_CHECK(processor_->Encode("x  y", &two).ok() && processor_->Encode("x y", &one).ok(), owner_,
             ": SentencePiece could not encode a probe text");
    return two == one;
}

}  // namespace mt::plugins::sentencepiece
