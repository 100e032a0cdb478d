// Streams the lines of a text file, plain or zstd-compressed (".zst"), without loading it:
// memory stays at one read buffer plus the longest line, which may not exceed max_line bytes (a
// few kilobytes of zstd can inflate to gigabytes without a newline). Lines end at "\n" (a
// preceding "\r" is dropped); the last line needs no terminator.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "mt/api.h"

namespace mt::io {

class MT_API LineReader {
  public:
    static constexpr int64_t kDefaultMaxLine = int64_t(1) << 30;  // 1 GiB

    // Throws mt::Error naming the file when it cannot be opened.
    explicit LineReader(const std::filesystem::path& path, int64_t max_line = kDefaultMaxLine);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line without its terminator, valid until the next call; false at the end. Throws
    // mt::Error naming the file and line for a line longer than max_line.
    bool next(std::string_view& line);
    // 1-based number of the line last returned.
    int64_t line_number() const { return line_number_; }
    // Uncompressed bytes consumed so far, terminators included.
    int64_t bytes_consumed() const { return consumed_; }
    const std::filesystem::path& path() const { return path_; }

  private:
    // Appends more decompressed bytes to buf_; false at end of input.
    bool fill();

    struct Zstd;
    std::filesystem::path path_;
    int64_t max_line_;
    std::FILE* file_ = nullptr;
    std::unique_ptr<Zstd> zstd_;
    std::string buf_;
    size_t pos_ = 0;  // start of the unread part of buf_
    int64_t line_number_ = 0, consumed_ = 0;
    bool eof_ = false;
};

}  // namespace mt::io
