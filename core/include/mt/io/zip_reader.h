// Reads the stored (uncompressed) ZIP archives that torch.save writes: the central directory,
// ZIP64 records included, gives each entry's name and size; payloads are zero-copy views of the
// map.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mt/api.h"
#include "mt/io/mapped_file.h"

namespace mt::io {

struct ZipEntry {
    std::string name;
    uint64_t offset = 0;  // of the payload in the file (after the local header)
    uint64_t size = 0;
    uint32_t crc32 = 0;
};

class MT_API ZipReader {
  public:
    // Maps `path` and parses its central directory; throws mt::Error naming the file and the
    // broken structure (no end record, compressed entry, entry outside the file, ...).
    explicit ZipReader(const std::filesystem::path& path);
    explicit ZipReader(std::shared_ptr<const MappedFile> file);

    // Entries in central-directory order.
    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(std::string_view name) const;
    const ZipEntry& at(std::string_view name) const;  // throws naming the missing entry
    // A view of the payload inside the mapped file, valid while the file lives.
    std::string_view payload(const ZipEntry& entry) const;
    // Recomputes the CRC-32 of an entry and throws when it differs from the directory's.
    void verify_crc(const ZipEntry& entry) const;
    const std::shared_ptr<const MappedFile>& file() const { return file_; }
    // The file name used in error messages.
    std::string display_name() const { return file_->path().filename().string(); }

  private:
    void parse();

    std::shared_ptr<const MappedFile> file_;
    std::vector<ZipEntry> entries_;
    std::unordered_map<std::string, size_t> index_;
};

}  // namespace mt::io
