// Writes stored ZIP archives the way torch.save does (miniz layout, payloads 64-byte aligned by an
// "FB" extra field, data descriptors, ZIP64 end records), streaming entries to a temporary file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"

namespace mt::io {

class MT_API ZipWriter {
  public:
    struct Written {
        std::string name;
        uint64_t header_offset = 0;
        uint64_t size = 0;
        uint32_t crc32 = 0;
    };

    // Creates `<path>.tmp` next to `path`; close() renames it into place. Without close() (an
    // exception unwinding) the destructor removes the temporary file and `path` is untouched.
    explicit ZipWriter(std::filesystem::path path);
    // Appends an archive to `file` at its position (torch.save into a stream, e.g. one record of
    // a DCP .distcp file): offsets count from the archive's first byte; close() writes the
    // directory and flushes, and the caller keeps (and closes, and syncs) the file. `name` names
    // it in errors.
    ZipWriter(std::FILE* file, std::string name);
    ~ZipWriter();
    ZipWriter(const ZipWriter&) = delete;
    ZipWriter& operator=(const ZipWriter&) = delete;

    // A whole record at once.
    void add(std::string_view name, std::string_view data);
    // A record streamed in pieces: begin_entry with its final size, write() exactly that many
    // bytes, end_entry(). The size must be known up front because ZIP64 fields are decided in
    // the local header.
    void begin_entry(std::string_view name, uint64_t size);
    void write(const void* data, size_t size);
    void end_entry();
    // Writes the central directory and end records, flushes, and renames into place.
    void close();

    // Entries completed so far, in write order.
    const std::vector<Written>& written() const { return written_; }
    // Bytes of the archive written so far (all of it after close()).
    uint64_t size() const { return pos_; }

  private:
    void put(const void* data, size_t size);

    std::filesystem::path path_, tmp_path_;
    std::FILE* file_ = nullptr;
    uint64_t pos_ = 0;
    bool borrowed_ = false;  // the caller's file: no temporary, rename or close
    bool in_entry_ = false;
    Written current_;
    uint64_t current_written_ = 0;
    std::vector<Written> written_;
};

}  // namespace mt::io
