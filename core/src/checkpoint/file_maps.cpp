#include "mt/checkpoint/file_maps.h"

#include <sys/mman.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace mt {

FileMaps::FileMaps(const FileMaps* before) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        // start-end perms offset dev inode path
        unsigned long long start = 0, end = 0, offset = 0, inode = 0;
        char perms[8] = {}, dev[32] = {};
        if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %31s %llu", &start, &end, perms, &offset,
                        dev, &inode) != 6)
            continue;
        // Ours are shared and read-only (io::MappedFile). A private map of a file (a shared
        // library's relocated, then write-protected data) would lose its changes to
        // MADV_DONTNEED and read the file's bytes back.
        if (inode == 0 || perms[1] == 'w' || perms[3] != 's') continue;
        if (before && (before->ranges_.count(uintptr_t(start)) || perms[2] == 'x')) continue;
        ranges_.emplace(uintptr_t(start), uintptr_t(end));
    }
}

void FileMaps::release_all() const {
    for (const auto& [from, to] : ranges_)
        ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace mt
