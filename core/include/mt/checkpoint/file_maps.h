// The file-backed, read-only memory maps of this process (/proc/self/maps), those a checkpoint
// loader opened (read before and after loading), so that the files' pages can be let go once the
// tensors made from them are written or copied: MADV_DONTNEED on a file's map only drops this
// process's view (the page cache keeps the bytes, and a later read faults them back in), whereas
// on anonymous memory it would zero it, so nothing outside these ranges is touched.
#pragma once

#include <cstdint>
#include <map>

#include "mt/api.h"

namespace mt {

class MT_API FileMaps {
  public:
    // The maps now, less those in `before` (by start address): the maps opened in between.
    explicit FileMaps(const FileMaps* before = nullptr);

    // Lets this process's pages of every map go (the source files' maps, when made with the
    // maps from before loading: a loader that converts tensors as they are made reads pages
    // that no tensor views).
    void release_all() const;

  private:
    std::map<uintptr_t, uintptr_t> ranges_;  // start -> end
};

}  // namespace mt
