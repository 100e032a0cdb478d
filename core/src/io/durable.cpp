#include "mt/io/durable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

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

void replace_directory(const std::filesystem::path& tmp, const std::filesystem::path& target) {
    namespace fs = std::filesystem;
    sync_tree(tmp);  // every byte on disk before a name points at it
    if (!fs::exists(fs::symlink_status(target))) {
        fs::rename(tmp, target);
    } else if (exchange_paths(tmp, target)) {
        fs::remove_all(tmp);  // the old copy, now under the temporary name
    } else {
        const fs::path old = target.string() + ".old." + std::to_string(::getpid());
        fs::rename(target, old);
        fs::rename(tmp, target);
        fs::remove_all(old);
    }
    fs::path parent = target.parent_path();
    sync_path(parent.empty() ? fs::path(".") : parent);
}

}  // namespace mt::io
