#include "zstd_file.h"

#include <zstd.h>

#include "mt/error.h"
#include "test_support.h"

namespace mt::test {

std::string read_maybe_zstd(const std::filesystem::path& path) {
    const std::string data = read_file(path);
    if (path.extension() != ".zst") return data;
    const unsigned long long size = ZSTD_getFrameContentSize(data.data(), data.size());
    MT_CHECK(size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN, path,
             ": bad zstd frame");
    std::string out(size, '\0');
    const size_t got = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
    MT_CHECK(!ZSTD_isError(got) && got == size, path, ": cannot decompress");
    return out;
}

}  // namespace mt::test
