// A fixture file's text, zstd-decompressed when its name ends in .zst (large reference data is
// committed compressed).
#pragma once

#include <filesystem>
#include <string>

namespace mt::test {

std::string read_maybe_zstd(const std::filesystem::path& path);

}  // namespace mt::test
