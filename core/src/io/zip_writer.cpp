#include "mt/io/zip_writer.h"
#include "mt/io/durable.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "mt/error.h"
#include "mt/io/crc32.h"

namespace mt::io {
namespace {

constexpr uint64_t kAlignment = 64;  // torch's storage alignment
constexpr uint64_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kFlags = 0x0808;  // bit 3: data descriptor follows; bit 11: UTF-8 names

// Little-endian field appender.
class Bytes {
  public:
    template <class T>
    Bytes& le(T v) {
        for (size_t i = 0; i < sizeof(T); ++i)
            buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        return *this;
    }
    Bytes& raw(std::string_view s) {
        buf_.append(s);
        return *this;
    }
    const std::string& str() const { return buf_; }

  private:
    std::string buf_;
};

// The ZIP64 extended-information field with the given 64-bit values (miniz's field order).
std::string zip64_extra(const std::vector<uint64_t>& values) {
    if (values.empty()) return {};
    Bytes b;
    b.le<uint16_t>(0x0001).le<uint16_t>(static_cast<uint16_t>(8 * values.size()));
    for (uint64_t v : values) b.le<uint64_t>(v);
    return b.str();
}

}  // namespace

ZipWriter::ZipWriter(std::filesystem::path path) : path_(std::move(path)) {
    tmp_path_ = path_;
    tmp_path_ += ".tmp";
    file_ = std::fopen(tmp_path_.c_str(), "wb");
    MT_CHECK(file_ != nullptr, "cannot create ", tmp_path_.string(), ": ", std::strerror(errno));
    // Large writes of storages go straight through; the buffer only batches headers.
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

ZipWriter::ZipWriter(std::FILE* file, std::string name)
    : path_(std::move(name)), tmp_path_(path_), file_(file), borrowed_(true) {
    MT_CHECK(file_ != nullptr, path_.string(), ": no file to append an archive to");
}

ZipWriter::~ZipWriter() {
    if (file_ && !borrowed_) {
        std::fclose(file_);
        std::error_code ec;
        std::filesystem::remove(tmp_path_, ec);
    }
}

void ZipWriter::put(const void* data, size_t size) {
    if (size == 0) return;
    MT_CHECK(std::fwrite(data, 1, size, file_) == size, "cannot write ", tmp_path_.string(), ": ",
             std::strerror(errno));
    pos_ += size;
}

void ZipWriter::add(std::string_view name, std::string_view data) {
    begin_entry(name, data.size());
    write(data.data(), data.size());
    end_entry();
}

void ZipWriter::begin_entry(std::string_view name, uint64_t size) {
    MT_CHECK(file_ != nullptr, path_.string(), ": zip writer already closed");
    MT_CHECK(!in_entry_, path_.string(), ": entry ", current_.name, " not finished before ", name);
    MT_CHECK(name.size() <= 0xFFFF, path_.string(), ": entry name too long");
    current_ = Written{std::string(name), pos_, size, 0};
    current_written_ = 0;
    in_entry_ = true;

    // Local header: sizes and CRC live in the data descriptor; ZIP64 sizes/offset go first in the
    // extra data when they do not fit 32 bits, then the "FB" padding that aligns the payload.
    // (miniz fills the compressed size in only later, so the local copy reads 0.)
    std::vector<uint64_t> big;
    if (size >= kMax32) big = {size, 0};
    if (pos_ >= kMax32) big.push_back(pos_);
    const std::string z64 = zip64_extra(big);
    const uint64_t unpadded = pos_ + 30 + name.size() + z64.size() + 4;
    const uint64_t padding = (kAlignment - unpadded % kAlignment) % kAlignment;
    Bytes h;
    h.le<uint32_t>(0x04034b50).le<uint16_t>(0).le<uint16_t>(kFlags).le<uint16_t>(0);
    h.le<uint16_t>(0).le<uint16_t>(0).le<uint32_t>(0).le<uint32_t>(0).le<uint32_t>(0);
    h.le<uint16_t>(static_cast<uint16_t>(name.size()));
    h.le<uint16_t>(static_cast<uint16_t>(z64.size() + 4 + padding));
    h.raw(name).raw(z64).raw("FB").le<uint16_t>(static_cast<uint16_t>(padding));
    h.raw(std::string(padding, 'Z'));
    put(h.str().data(), h.str().size());
}

void ZipWriter::write(const void* data, size_t size) {
    MT_CHECK(in_entry_, path_.string(), ": write outside an entry");
    MT_CHECK(current_written_ + size <= current_.size, path_.string(), ": entry ", current_.name,
             " declared ", current_.size, " bytes but more were written");
    current_.crc32 = crc32_update(current_.crc32, data, size);
    put(data, size);
    current_written_ += size;
}

void ZipWriter::end_entry() {
    MT_CHECK(in_entry_, path_.string(), ": end_entry without begin_entry");
    MT_CHECK(current_written_ == current_.size, path_.string(), ": entry ", current_.name,
             " declared ", current_.size, " bytes but ", current_written_, " were written");
    // miniz writes 64-bit descriptor sizes exactly when the local header carried ZIP64 data.
    const bool wide = current_.size >= kMax32 || current_.header_offset >= kMax32;
    Bytes d;
    d.le<uint32_t>(0x08074b50).le<uint32_t>(current_.crc32);
    if (wide) {
        d.le<uint64_t>(current_.size).le<uint64_t>(current_.size);
    } else {
        d.le<uint32_t>(static_cast<uint32_t>(current_.size))
            .le<uint32_t>(static_cast<uint32_t>(current_.size));
    }
    put(d.str().data(), d.str().size());
    written_.push_back(std::move(current_));
    in_entry_ = false;
}

void ZipWriter::close() {
    MT_CHECK(file_ != nullptr, path_.string(), ": zip writer already closed");
    MT_CHECK(!in_entry_, path_.string(), ": entry ", current_.name, " not finished at close");
    const uint64_t dir_offset = pos_;
    for (const Written& w : written_) {
        std::vector<uint64_t> big;
        if (w.size >= kMax32) big = {w.size, w.size};
        if (w.header_offset >= kMax32) big.push_back(w.header_offset);
        const std::string z64 = zip64_extra(big);
        const auto clamp = [](uint64_t v) {
            return static_cast<uint32_t>(v < kMax32 ? v : kMax32);
        };
        Bytes c;
        c.le<uint32_t>(0x02014b50).le<uint16_t>(0).le<uint16_t>(0).le<uint16_t>(kFlags);
        c.le<uint16_t>(0).le<uint16_t>(0).le<uint16_t>(0).le<uint32_t>(w.crc32);
        c.le<uint32_t>(clamp(w.size)).le<uint32_t>(clamp(w.size));
        c.le<uint16_t>(static_cast<uint16_t>(w.name.size()))
            .le<uint16_t>(static_cast<uint16_t>(z64.size()));
        c.le<uint16_t>(0).le<uint16_t>(0).le<uint16_t>(0).le<uint32_t>(0);
        c.le<uint32_t>(clamp(w.header_offset)).raw(w.name).raw(z64);
        put(c.str().data(), c.str().size());
    }
    const uint64_t dir_size = pos_ - dir_offset;
    const uint64_t n = written_.size();
    // torch (miniz with MZ_ZIP_FLAG_WRITE_ZIP64) always writes the ZIP64 end record and locator.
    const uint64_t end64 = pos_;
    Bytes e;
    e.le<uint32_t>(0x06064b50).le<uint64_t>(44).le<uint16_t>(0x031E).le<uint16_t>(0x002D);
    e.le<uint32_t>(0).le<uint32_t>(0).le<uint64_t>(n).le<uint64_t>(n);
    e.le<uint64_t>(dir_size).le<uint64_t>(dir_offset);
    e.le<uint32_t>(0x07064b50).le<uint32_t>(0).le<uint64_t>(end64).le<uint32_t>(1);
    e.le<uint32_t>(0x06054b50).le<uint16_t>(0).le<uint16_t>(0);
    e.le<uint16_t>(static_cast<uint16_t>(n < 0xFFFF ? n : 0xFFFF));
    e.le<uint16_t>(static_cast<uint16_t>(n < 0xFFFF ? n : 0xFFFF));
    e.le<uint32_t>(static_cast<uint32_t>(dir_size < kMax32 ? dir_size : kMax32));
    e.le<uint32_t>(static_cast<uint32_t>(dir_offset < kMax32 ? dir_offset : kMax32));
    e.le<uint16_t>(0);
    put(e.str().data(), e.str().size());

    if (borrowed_) {
        const bool flushed = std::fflush(file_) == 0;
        file_ = nullptr;
        MT_CHECK(flushed, "cannot write ", path_.string(), ": ", std::strerror(errno));
        return;
    }
    // On disk before the name is the real one.
    const bool flushed = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
    const int err = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) {
        std::error_code ec;
        std::filesystem::remove(tmp_path_, ec);
        MT_FAIL("cannot write ", tmp_path_.string(), ": ", std::strerror(err));
    }
    try {
        rename_path(tmp_path_, path_);
    } catch (const Error&) {
        std::error_code ignored;
        std::filesystem::remove(tmp_path_, ignored);
        throw;
    }
}

}  // namespace mt::io
