// The parts of a SentencePiece .model file (the ModelProto protocol buffer of
// sentencepiece_model.proto) that decide how BPE encodes: the pieces with their scores and
// types, the model type, byte fallback and the normalizer's settings. Read with a small
// protobuf wire-format reader; the library's own headers do not expose the proto.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt::plugins::sentencepiece {

struct SentencePieceModel {
    enum PieceType : int32_t {
        kNormal = 1,
        kUnknown = 2,
        kControl = 3,
        kUserDefined = 4,
        kUnused = 5,
        kByte = 6
    };
    struct Piece {
        std::string text;
        float score = 0;
        int32_t type = kNormal;
    };
    std::vector<Piece> pieces;
    int32_t model_type = 1;  // TrainerSpec.model_type: 1 unigram, 2 BPE, 3 word, 4 char
    bool byte_fallback = false;
    bool treat_whitespace_as_suffix = false;
    // NormalizerSpec, with the proto's defaults.
    std::string normalizer_name;
    bool precompiled_charsmap = false;  // a non-empty charsmap
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
    bool escape_whitespaces = true;
};

// An mt::Error naming `file` when the bytes are not such a protocol buffer.
SentencePieceModel read_model_proto(std::string_view bytes, const std::string& file);

}  // namespace mt::plugins::sentencepiece
