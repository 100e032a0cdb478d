// AtomicFile: a text or binary output written to "<path>.tmp" and renamed onto `path` by
// commit(), so a reader never sees half a file and a failed run leaves no partial output. A
// symlink is written through (its target replaced, the link kept); a FIFO, device or socket is
// written directly (renaming onto it would replace the node, e.g. /dev/null, not feed it).
#pragma once

#include <filesystem>
#include <fstream>

#include "mt/api.h"

namespace mt::io {

class MT_API AtomicFile {
  public:
    // Opens "<path>.tmp" for writing (mt::Error naming it when that fails).
    explicit AtomicFile(std::filesystem::path path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    // Without commit(), removes the temporary file.
    ~AtomicFile();

    std::ofstream& stream() { return out_; }
    // Flushes, checks every write succeeded, renames into place (mt::Error naming the path).
    void commit();

  private:
    std::filesystem::path path_, tmp_;
    std::ofstream out_;
    bool direct_ = false;  // a special file: written in place
    bool committed_ = false;
};

}  // namespace mt::io
