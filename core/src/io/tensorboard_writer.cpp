#include "mt/io/tensorboard_writer.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "mt/error.h"

namespace mt::io {

namespace {

std::array<uint32_t, 256> make_crc32c_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        t[i] = c;
    }
    return t;
}

// Protocol-buffer wire format: just what an Event with a scalar Summary needs.
void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(char(v | 0x80));
        v >>= 7;
    }
    out.push_back(char(v));
}
void put_tag(std::string& out, uint32_t field, uint32_t wire_type) {
    put_varint(out, (uint64_t(field) << 3) | wire_type);
}
template <class T>
void put_fixed(std::string& out, T v) {
    char bytes[sizeof v];
    std::memcpy(bytes, &v, sizeof v);
    out.append(bytes, sizeof v);
}
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
    put_tag(out, field, 2);
    put_varint(out, bytes.size());
    out.append(bytes);
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Event fields: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
std::string event_header(double wall_time, int64_t step) {
    std::string e;
    put_tag(e, 1, 1);
    put_fixed(e, wall_time);
    if (step != 0) {
        put_tag(e, 2, 0);
        put_varint(e, uint64_t(step));
    }
    return e;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
    static const auto table = make_crc32c_table();
    uint32_t c = 0xFFFFFFFFu;
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
    uint32_t c = crc32c(data, size);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string TensorBoardWriter::frame(std::string_view payload) {
    std::string out;
    uint64_t length = payload.size();
    put_fixed(out, length);
    put_fixed(out, masked_crc32c(&length, sizeof length));
    out.append(payload);
    put_fixed(out, masked_crc32c(payload.data(), payload.size()));
    return out;
}

std::string TensorBoardWriter::scalar_event(std::string_view tag, float value, int64_t step,
                                            double wall_time) {
    // Summary.Value: tag = 1, simple_value = 2 (float); Summary: value = 1 (repeated).
    std::string v;
    put_bytes(v, 1, tag);
    put_tag(v, 2, 5);
    put_fixed(v, value);
    std::string summary;
    put_bytes(summary, 1, v);
    std::string e = event_header(wall_time, step);
    put_bytes(e, 5, summary);
    return e;
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    MT_CHECK(!ec, "--tensorboard-dir ", dir.string(), ": ", ec.message());
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    double t = now_seconds();
    path_ = dir / ("events.out.tfevents." + std::to_string(int64_t(t)) + "." + host + "." +
                   std::to_string(getpid()) + ".0");
    file_ = std::fopen(path_.c_str(), "wb");
    MT_CHECK(file_, "cannot create ", path_.string(), ": ", std::strerror(errno));
    std::string version = event_header(t, 0);
    put_bytes(version, 3, "brain.Event:2");
    write_record(version);
    flush();
}

TensorBoardWriter::~TensorBoardWriter() {
    if (file_) std::fclose(file_);
}

void TensorBoardWriter::write_record(std::string_view payload) {
    std::string f = frame(payload);
    MT_CHECK(std::fwrite(f.data(), 1, f.size(), file_) == f.size(), "write error on ",
             path_.string(), ": ", std::strerror(errno));
}

void TensorBoardWriter::add_scalar(std::string_view tag, float value, int64_t step,
                                   double wall_time) {
    write_record(scalar_event(tag, value, step, wall_time));
}

void TensorBoardWriter::add_scalar(std::string_view tag, float value, int64_t step) {
    add_scalar(tag, value, step, now_seconds());
}

void TensorBoardWriter::flush() {
    MT_CHECK(std::fflush(file_) == 0, "write error on ", path_.string(), ": ",
             std::strerror(errno));
}

}  // namespace mt::io
