#include "model_proto.h"

#include <cstring>

#include "mt/error.h"

namespace mt::plugins::sentencepiece {

namespace {

// One protocol buffer message's fields, in order.
class WireReader {
  public:
    WireReader(std::string_view bytes, const std::string& file) : rest_(bytes), file_(file) {}

    bool done() const { return rest_.empty(); }

    // The next field's number and wire type; its value is read by one of the calls below.
    void next(uint32_t& field, uint32_t& wire_type) {
        const uint64_t key = varint();
        field = uint32_t(key >> 3);
        wire_type = uint32_t(key & 7);
    }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            MT_CHECK(!rest_.empty(), file_, ": not a SentencePiece model (a truncated varint)");
            const uint8_t b = uint8_t(rest_.front());
            rest_.remove_prefix(1);
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        MT_FAIL(file_, ": not a SentencePiece model (a varint over 10 bytes)");
    }
    std::string_view bytes() {
        const uint64_t n = varint();
        MT_CHECK(n <= rest_.size(), file_, ": not a SentencePiece model (a field of ", n,
                 " bytes where ", rest_.size(), " remain)");
        const std::string_view out = rest_.substr(0, size_t(n));
        rest_.remove_prefix(size_t(n));
        return out;
    }
    float fixed32_float() {
        MT_CHECK(rest_.size() >= 4, file_, ": not a SentencePiece model (a truncated float)");
        float f;
        std::memcpy(&f, rest_.data(), 4);
        rest_.remove_prefix(4);
        return f;
    }
    void skip(uint32_t wire_type) {
        switch (wire_type) {
            case 0:
                varint();
                return;
            case 1:
                MT_CHECK(rest_.size() >= 8, file_, ": not a SentencePiece model");
                rest_.remove_prefix(8);
                return;
            case 2:
                bytes();
                return;
            case 5:
                MT_CHECK(rest_.size() >= 4, file_, ": not a SentencePiece model");
                rest_.remove_prefix(4);
                return;
            default:
                MT_FAIL(file_, ": not a SentencePiece model (wire type ", wire_type, ")");
        }
    }

  private:
    std::string_view rest_;
    const std::string& file_;
};

SentencePieceModel::Piece read_piece(std::string_view bytes, const std::string& file) {
    SentencePieceModel::Piece p;
    WireReader r(bytes, file);
    while (!r.done()) {
        uint32_t field, wire;
        r.next(field, wire);
        if (field == 1 && wire == 2)
            p.text = std::string(r.bytes());
        else if (field == 2 && wire == 5)
            p.score = r.fixed32_float();
        else if (field == 3 && wire == 0)
            p.type = int32_t(r.varint());
        else
            r.skip(wire);
    }
    return p;
}

void read_trainer_spec(std::string_view bytes, const std::string& file, SentencePieceModel& m) {
    WireReader r(bytes, file);
    while (!r.done()) {
        uint32_t field, wire;
        r.next(field, wire);
        if (field == 3 && wire == 0)
            m.model_type = int32_t(r.varint());
        else if (field == 24 && wire == 0)
            m.treat_whitespace_as_suffix = r.varint() != 0;
        else if (field == 35 && wire == 0)
            m.byte_fallback = r.varint() != 0;
        else
            r.skip(wire);
    }
}

void read_normalizer_spec(std::string_view bytes, const std::string& file, SentencePieceModel& m) {
    WireReader r(bytes, file);
    while (!r.done()) {
        uint32_t field, wire;
        r.next(field, wire);
        if (field == 1 && wire == 2)
            m.normalizer_name = std::string(r.bytes());
        else if (field == 2 && wire == 2)
            m.precompiled_charsmap = !r.bytes().empty();
        else if (field == 3 && wire == 0)
            m.add_dummy_prefix = r.varint() != 0;
        else if (field == 4 && wire == 0)
            m.remove_extra_whitespaces = r.varint() != 0;
        else if (field == 5 && wire == 0)
            m.escape_whitespaces = r.varint() != 0;
        else
            r.skip(wire);
    }
}

}  // namespace

SentencePieceModel read_model_proto(std::string_view bytes, const std::string& file) {
    SentencePieceModel m;
    WireReader r(bytes, file);
    while (!r.done()) {
        uint32_t field, wire;
        r.next(field, wire);
        if (field == 1 && wire == 2)
            m.pieces.push_back(read_piece(r.bytes(), file));
        else if (field == 2 && wire == 2)
            read_trainer_spec(r.bytes(), file, m);
        else if (field == 3 && wire == 2)
            read_normalizer_spec(r.bytes(), file, m);
        else
            r.skip(wire);
    }
    return m;
}

}  // namespace mt::plugins::sentencepiece
