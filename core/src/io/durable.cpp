#include "mt/io/durable.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mt/error.h"

namespace mt::io {

namespace {

// MT_FAULT_KILL_AT_RENAME: the process dies just before this rename (see rename_path).
void count_rename() {
    static const long kill_at = [] {
        const char* v = std::getenv("MT_FAULT_KILL_AT_RENAME");
        return v ? std::strtol(v, nullptr, 10) : 0L;
    }();
    static std::atomic<long> renames{0};
    if (kill_at > 0 && ++renames == kill_at) std::raise(SIGKILL);
}

}  // namespace

void rename_path(const std::filesystem::path& from, const std::filesystem::path& to) {
    count_rename();
    std::error_code error;
    std::filesystem::rename(from, to, error);
    MT_CHECK(!error, "cannot rename ", from.string(), " to ", to.string(), ": ", error.message());
}

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
    count_rename();
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
        rename_path(tmp, target);
    } else if (exchange_paths(tmp, target)) {
        fs::remove_all(tmp);  // the old copy, now under the temporary name
    } else {
        const fs::path old = target.string() + ".old." + std::to_string(::getpid());
        rename_path(target, old);
        rename_path(tmp, target);
        fs::remove_all(old);
    }
    fs::path parent = target.parent_path();
    sync_path(parent.empty() ? fs::path(".") : parent);
}

}  // namespace mt::io
