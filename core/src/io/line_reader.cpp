#include "mt/io/line_reader.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "mt/error.h"

namespace mt::io {

namespace {
constexpr size_t kChunk = 1 << 20;

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
}  // namespace

struct LineReader::Zstd {
    ZSTD_DStream* stream = ZSTD_createDStream();
    std::vector<char> in = std::vector<char>(ZSTD_DStreamInSize());
    ZSTD_inBuffer input{nullptr, 0, 0};
    bool frame_done = true;  // no frame started, or the last one finished
    ~Zstd() { ZSTD_freeDStream(stream); }
};

LineReader::LineReader(const std::filesystem::path& path, int64_t max_line)
    : path_(path), max_line_(max_line) {
    file_ = std::fopen(path.c_str(), "rb");
    MT_CHECK(file_, "cannot open ", path.string(), ": ", std::strerror(errno));
    std::string name = path.filename().string();
    if (ends_with(name, ".zst")) {
        zstd_ = std::make_unique<Zstd>();
        ZSTD_initDStream(zstd_->stream);
    } else {
        MT_CHECK(!ends_with(name, ".gz") && !ends_with(name, ".bz2") && !ends_with(name, ".xz"),
                 path.string(), ": unsupported compression (plain text and .zst are supported)");
    }
}

LineReader::~LineReader() {
    if (file_) std::fclose(file_);
}

bool LineReader::fill() {
    if (eof_) return false;
    // Drop the consumed prefix so the buffer holds at most one partial line plus a chunk.
    if (pos_ > 0) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    size_t old = buf_.size();
    if (!zstd_) {
        buf_.resize(old + kChunk);
        size_t n = std::fread(buf_.data() + old, 1, kChunk, file_);
        buf_.resize(old + n);
        MT_CHECK(!std::ferror(file_), "read error on ", path_.string(), ": ", std::strerror(errno));
        if (n == 0) eof_ = true;
        return n > 0;
    }
    Zstd& z = *zstd_;
    while (true) {
        if (z.input.pos == z.input.size) {
            size_t n = std::fread(z.in.data(), 1, z.in.size(), file_);
            MT_CHECK(!std::ferror(file_), "read error on ", path_.string(), ": ",
                     std::strerror(errno));
            if (n == 0) {
                eof_ = true;
                MT_CHECK(z.frame_done, path_.string(), ": truncated zstd stream");
                return buf_.size() > old;
            }
            z.input = {z.in.data(), n, 0};
        }
        buf_.resize(old + kChunk);
        ZSTD_outBuffer out{buf_.data() + old, kChunk, 0};
        size_t rc = ZSTD_decompressStream(z.stream, &out, &z.input);
        MT_CHECK(!ZSTD_isError(rc), path_.string(),
                 ": corrupt zstd stream: ", ZSTD_getErrorName(rc));
        z.frame_done = rc == 0;
        buf_.resize(old + out.pos);
        if (out.pos > 0) return true;
    }
}

bool LineReader::next(std::string_view& line) {
    size_t scan_from = pos_;
    while (true) {
        const char* base = buf_.data();
        const void* nl = buf_.size() > scan_from
                             ? std::memchr(base + scan_from, '\n', buf_.size() - scan_from)
                             : nullptr;
        if (nl) {
            size_t end = static_cast<const char*>(nl) - base;
            size_t len = end - pos_;
            consumed_ += static_cast<int64_t>(len + 1);
            if (len > 0 && base[pos_ + len - 1] == '\r') --len;
            line = std::string_view(base + pos_, len);
            pos_ = end + 1;
            ++line_number_;
            return true;
        }
        size_t unread = buf_.size() - pos_;
        MT_CHECK(int64_t(unread) <= max_line_, path_.string(), ": line ", line_number_ + 1,
                 " is longer than ", max_line_,
                 " bytes without a newline (not a text file of "
                 "lines?)");
        if (!fill()) {
            if (buf_.size() == pos_) return false;
            // Last line without a terminator.
            size_t len = buf_.size() - pos_;
            consumed_ += static_cast<int64_t>(len);
            if (len > 0 && buf_[pos_ + len - 1] == '\r') --len;
            line = std::string_view(buf_.data() + pos_, len);
            pos_ = buf_.size();
            ++line_number_;
            return true;
        }
        scan_from = pos_ + unread;  // fill() moved the unread part to the front
    }
}

}  // namespace mt::io
