#include "mt/io/zip_reader.h"

#include <algorithm>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "mt/error.h"
#include "mt/io/crc32.h"

namespace mt::io {
namespace {

// Lets this process's view of the pages holding `bytes` (inside `file`'s map) go: they stay in
// the page cache, and the map (shared, read-only) reads them back on use, so that reading a whole
// checkpoint does not keep its size in memory. By whole blocks of the kernel's fault-around
// (64 kB by default: a fault maps the cached pages of its block), which also maps the end of the
// record before and the start of the next: otherwise a file of many small records keeps tens of
// kB of each.
// Files from this size up have their directory's pages let go as they are read (a smaller one, a
// DCP chunk's archive, is read whole soon after: the calls would be wasted).
constexpr uint64_t kReleasedFrom = uint64_t(1) << 20;

void release_pages(const MappedFile& file, std::string_view bytes) {
    constexpr uintptr_t kBlock = uintptr_t(64) << 10;
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t block = std::max(kBlock, page);
    const uintptr_t map_begin = reinterpret_cast<uintptr_t>(file.data()) & ~(page - 1);
    const uintptr_t map_end =
        (reinterpret_cast<uintptr_t>(file.data()) + file.size() + page - 1) & ~(page - 1);
    const uintptr_t begin =
        std::max(map_begin, reinterpret_cast<uintptr_t>(bytes.data()) & ~(block - 1));
    const uintptr_t end =
        std::min(map_end, (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size() + block - 1) &
                              ~(block - 1));
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint64_t kEndSize = 22;
constexpr uint64_t kMaxComment = 0xFFFF;

// Bounds-checked little-endian reads; `what` names the structure being parsed.
class Cursor {
  public:
    Cursor(const MappedFile& file, std::string name) : file_(file), name_(std::move(name)) {}

    void need(uint64_t offset, uint64_t size, const char* what) const {
        MT_CHECK(offset <= file_.size() && size <= file_.size() - offset, name_,
                 ": truncated zip: ", what, " at byte ", offset, " needs ", size,
                 " bytes but the file has ", file_.size());
    }
    template <class T>
    T get(uint64_t offset, const char* what) const {
        need(offset, sizeof(T), what);
        T v;
        std::memcpy(&v, file_.data() + offset, sizeof(T));
        return v;
    }
    const std::string& name() const { return name_; }

  private:
    const MappedFile& file_;
    std::string name_;
};

}  // namespace

ZipReader::ZipReader(const std::filesystem::path& path)
    : ZipReader(std::make_shared<const MappedFile>(path)) {}

ZipReader::ZipReader(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
    parse();
    // The directory's pages (and the last headers').
    if (file_->size() >= kReleasedFrom) release_pages(*file_, file_->bytes());
}

void ZipReader::parse() {
    const MappedFile& f = *file_;
    Cursor c(f, display_name());
    const uint64_t size = f.size();
    MT_CHECK(size >= kEndSize, c.name(), ": not a zip file (", size, " bytes)");

    // The end record sits within the last 22 + 65535 bytes; scan backwards for its signature.
    uint64_t end = UINT64_MAX;
    const uint64_t lowest = size - kEndSize > kMaxComment ? size - kEndSize - kMaxComment : 0;
    for (uint64_t pos = size - kEndSize + 1; pos-- > lowest;) {
        if (c.get<uint32_t>(pos, "end of central directory") == kEndSig) {
            end = pos;
            break;
        }
    }
    MT_CHECK(end != UINT64_MAX, c.name(), ": not a zip file (no end of central directory record)");

    uint64_t count = c.get<uint16_t>(end + 10, "end record");
    uint64_t dir_size = c.get<uint32_t>(end + 12, "end record");
    uint64_t dir_offset = c.get<uint32_t>(end + 16, "end record");
    if (end >= 20 && c.get<uint32_t>(end - 20, "zip64 locator") == kEnd64LocatorSig) {
        uint64_t rec = c.get<uint64_t>(end - 20 + 8, "zip64 locator");
        MT_CHECK(c.get<uint32_t>(rec, "zip64 end record") == kEnd64Sig, c.name(),
                 ": zip64 locator points at byte ", rec, ", which is no zip64 end record");
        count = c.get<uint64_t>(rec + 32, "zip64 end record");
        dir_size = c.get<uint64_t>(rec + 40, "zip64 end record");
        dir_offset = c.get<uint64_t>(rec + 48, "zip64 end record");
    }
    c.need(dir_offset, dir_size, "central directory");
    // Each directory entry needs at least 46 bytes, which bounds a forged count.
    MT_CHECK(count <= dir_size / 46, c.name(), ": central directory of ", dir_size,
             " bytes cannot hold ", count, " entries");

    entries_.reserve(count);
    uint64_t pos = dir_offset;
    for (uint64_t i = 0; i < count; ++i) {
        MT_CHECK(c.get<uint32_t>(pos, "central directory entry") == kCentralSig, c.name(),
                 ": central directory entry ", i, " at byte ", pos, " has a bad signature");
        const uint16_t method = c.get<uint16_t>(pos + 10, "central directory entry");
        ZipEntry e;
        e.crc32 = c.get<uint32_t>(pos + 16, "central directory entry");
        uint64_t comp_size = c.get<uint32_t>(pos + 20, "central directory entry");
        e.size = c.get<uint32_t>(pos + 24, "central directory entry");
        const uint16_t name_len = c.get<uint16_t>(pos + 28, "central directory entry");
        const uint16_t extra_len = c.get<uint16_t>(pos + 30, "central directory entry");
        const uint16_t comment_len = c.get<uint16_t>(pos + 32, "central directory entry");
        uint64_t local = c.get<uint32_t>(pos + 42, "central directory entry");
        c.need(pos + 46, uint64_t{name_len} + extra_len, "central directory entry name");
        e.name.assign(reinterpret_cast<const char*>(f.data() + pos + 46), name_len);

        // ZIP64 extended information: only the fields saturated in the fixed part are present.
        uint64_t x = pos + 46 + name_len;
        const uint64_t x_end = x + extra_len;
        while (x + 4 <= x_end) {
            const uint16_t id = c.get<uint16_t>(x, "extra field");
            const uint16_t len = c.get<uint16_t>(x + 2, "extra field");
            MT_CHECK(x + 4 + len <= x_end, c.name(), ": entry ", e.name,
                     ": extra field overruns its entry");
            if (id == 0x0001) {
                uint64_t p = x + 4;
                auto take = [&](uint64_t& field) {
                    MT_CHECK(p + 8 <= x + 4 + len, c.name(), ": entry ", e.name,
                             ": zip64 extra field too short");
                    field = c.get<uint64_t>(p, "zip64 extra field");
                    p += 8;
                };
                if (e.size == 0xFFFFFFFFu) take(e.size);
                if (comp_size == 0xFFFFFFFFu) take(comp_size);
                if (local == 0xFFFFFFFFu) take(local);
            }
            x += 4 + len;
        }
        MT_CHECK(method == 0, c.name(), ": entry ", e.name, " is compressed (method ", method,
                 "); only stored entries are supported");
        MT_CHECK(comp_size == e.size, c.name(), ": entry ", e.name,
                 " is stored but its sizes differ (", comp_size, " vs ", e.size, ")");

        // The payload follows the local header, whose name and extra lengths may differ from
        // the directory's (torch pads with an "FB" extra field only locally).
        MT_CHECK(c.get<uint32_t>(local, "local header") == kLocalSig, c.name(), ": entry ", e.name,
                 ": no local header at byte ", local);
        const uint64_t payload = local + 30 + c.get<uint16_t>(local + 26, "local header") +
                                 c.get<uint16_t>(local + 28, "local header");
        c.need(payload, e.size, ("payload of " + e.name).c_str());
        e.offset = payload;
        // Reading the header mapped the cached pages around it: in a large file, let them go
        // now, or reading a directory of many records maps nearly the whole file for a moment.
        if (size >= kReleasedFrom)
            release_pages(f, {reinterpret_cast<const char*>(f.data()) + local, 30});

        MT_CHECK(index_.emplace(e.name, entries_.size()).second, c.name(), ": duplicate entry ",
                 e.name);
        entries_.push_back(std::move(e));
        pos += 46 + uint64_t{name_len} + extra_len + comment_len;
        MT_CHECK(pos <= dir_offset + dir_size, c.name(), ": central directory entry ", i,
                 " overruns the directory");
    }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipReader::at(std::string_view name) const {
    const ZipEntry* e = find(name);
    MT_CHECK(e != nullptr, display_name(), ": no record ", name, " in the archive");
    return *e;
}

std::string_view ZipReader::payload(const ZipEntry& entry) const {
    return {reinterpret_cast<const char*>(file_->data() + entry.offset), entry.size};
}

void ZipReader::verify_crc(const ZipEntry& entry) const {
    const std::string_view p = payload(entry);
    const uint32_t crc = crc32_update(0, p.data(), p.size());
    MT_CHECK(crc == entry.crc32, display_name(), ": record ", entry.name, " has CRC-32 ", crc,
             " but the directory says ", entry.crc32);
    release_pages(*file_, p);
}

}  // namespace mt::io
