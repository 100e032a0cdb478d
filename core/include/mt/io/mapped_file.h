// A read-only memory map of a whole file: the zero-copy way datasets and checkpoints are read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "mt/api.h"

namespace mt::io {

class MT_API MappedFile {
  public:
    MappedFile() = default;
    // Maps `path` read-only; throws mt::Error naming the path when it cannot.
    explicit MappedFile(const std::filesystem::path& path);
    // Maps bytes [offset, offset + length) of `path` only (e.g. one record of a file that
    // concatenates self-contained records); data() is the byte at `offset`. Throws naming the
    // path when the file is shorter.
    MappedFile(const std::filesystem::path& path, uint64_t offset, uint64_t length);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    std::string_view bytes() const { return {reinterpret_cast<const char*>(data_), size_}; }
    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    size_t map_delta_ = 0;  // data_ - start of the mapping (page alignment of a window)
};

}  // namespace mt::io
