// Helpers of the libFuzzer targets: an input written to a file of its own (for the readers that
// map files), and the committed fixtures' location. A target calls the real reader and lets
// mt::Error pass (a clean refusal); crashes, sanitizer reports, leaks and timeouts are findings.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace mt::fuzz {

inline std::filesystem::path source_dir() {
    return MT_FUZZ_SOURCE_DIR;
}

// A file for this process's inputs (under TMPDIR): "input" + `suffix` ("/name" puts a file of
// that name in the input folder), rewritten with `bytes` on each call.
inline std::filesystem::path write_input(std::string_view bytes, const std::string& suffix = "") {
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("mt_fuzz_" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    const std::filesystem::path path = dir / ("input" + suffix);
    std::filesystem::create_directories(path.parent_path());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace mt::fuzz
