#include "mt/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "mt/error.h"

namespace mt::io {

namespace {

// Opens `path` for mapping and reports its size; throws naming the path.
int open_sized(const std::filesystem::path& path, uint64_t& size) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    MT_CHECK(fd >= 0, "cannot open ", path.string(), ": ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        MT_FAIL("cannot stat ", path.string(), ": ", std::strerror(err));
    }
    size = static_cast<uint64_t>(st.st_size);
    return fd;
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
    uint64_t file_size = 0;
    int fd = open_sized(path, file_size);
    size_ = static_cast<size_t>(file_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        int err = errno;
        ::close(fd);
        MT_CHECK(p != MAP_FAILED, "cannot map ", path.string(), ": ", std::strerror(err));
        data_ = static_cast<const uint8_t*>(p);
    } else {
        ::close(fd);
    }
}

MappedFile::MappedFile(const std::filesystem::path& path, uint64_t offset, uint64_t length)
    : path_(path) {
    uint64_t file_size = 0;
    int fd = open_sized(path, file_size);
    if (offset > file_size || length > file_size - offset) {
        ::close(fd);
        MT_FAIL(path.string(), " is truncated: bytes ", offset, "..", offset + length,
                " are needed but the file has ", file_size);
    }
    size_ = static_cast<size_t>(length);
    if (size_ > 0) {
        const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
        map_delta_ = static_cast<size_t>(offset % page);
        void* p = ::mmap(nullptr, size_ + map_delta_, PROT_READ, MAP_SHARED, fd,
                         static_cast<off_t>(offset - map_delta_));
        int err = errno;
        ::close(fd);
        MT_CHECK(p != MAP_FAILED, "cannot map ", path.string(), ": ", std::strerror(err));
        data_ = static_cast<const uint8_t*>(p) + map_delta_;
    } else {
        ::close(fd);
    }
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_ - map_delta_), size_ + map_delta_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      map_delta_(std::exchange(other.map_delta_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        if (data_) ::munmap(const_cast<uint8_t*>(data_ - map_delta_), size_ + map_delta_);
        path_ = std::move(other.path_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        map_delta_ = std::exchange(other.map_delta_, 0);
    }
    return *this;
}

}  // namespace mt::io
