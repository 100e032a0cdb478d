#include "mt/io/durable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "mt/error.h"

namespace mt::io {

void sync_path(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    MT_CHECK(fd >= 0, "cannot open ", path.string(), " to sync it: ", std::strerror(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    // Some filesystems cannot sync a directory (EINVAL); their renames are what they are.
    MT_CHECK(rc == 0 || (err == EINVAL && std::filesystem::is_directory(path)), "cannot sync ",
             path.string(), " to disk: ", std::strerror(err));
}

void sync_tree(const std::filesystem::path& root) {
    if (std::filesystem::is_directory(root))
        for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
            if (entry.is_regular_file() || entry.is_directory()) sync_path(entry.path());
    sync_path(root);
}

bool exchange_paths(const std::filesystem::path& a, const std::filesystem::path& b) {
    if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
    const int err = errno;
    MT_CHECK(err == EINVAL || err == ENOSYS || err == ENOTSUP, "cannot swap ", a.string(), " and ",
             b.string(), ": ", std::strerror(err));
    return false;
}

}  // namespace mt::io
