#include "mt/io/atomic_file.h"

#include "mt/error.h"
#include "mt/io/durable.h"

namespace mt::io {

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(path_, ec)))
        if (fs::path target = fs::weakly_canonical(path_, ec); !ec) path_ = target;
    const fs::file_status st = fs::status(path_, ec);
    direct_ = fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
    tmp_ = direct_ ? path_ : fs::path(path_.string() + ".tmp");
    out_.open(tmp_, std::ios::binary | std::ios::trunc);
    MT_CHECK(out_.good(), tmp_.string(), ": cannot open for writing");
}

AtomicFile::~AtomicFile() {
    if (committed_ || direct_) return;
    out_.close();
    std::error_code ignored;
    std::filesystem::remove(tmp_, ignored);
}

void AtomicFile::commit() {
    out_.flush();
    MT_CHECK(out_.good(), tmp_.string(), ": write failed (disk full?)");
    out_.close();
    if (direct_) {
        committed_ = true;
        return;
    }
    sync_path(tmp_);  // its bytes on disk before its name is the real one
    rename_path(tmp_, path_);
    committed_ = true;
    sync_path(path_.parent_path().empty() ? std::filesystem::path(".") : path_.parent_path());
}

}  // namespace mt::io
