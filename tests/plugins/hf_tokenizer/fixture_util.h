// Shared by the HuggingFaceTokenizer tests: tokenizer folders made from the committed fixtures.
#pragma once

#include <zstd.h>

#include <filesystem>
#include <string>

#include "mt/error.h"
#include "test_support.h"

namespace mt::plugins::hf_tokenizer::test {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "hf_tokenizer" / name;
}

// A file's text, zstd-decompressed when its name ends in .zst.
inline std::string read_fixture(const std::filesystem::path& path) {
    const std::string data = mt::test::read_file(path);
    if (path.extension() != ".zst") return data;
    const unsigned long long size = ZSTD_getFrameContentSize(data.data(), data.size());
    MT_CHECK(size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN, path,
             ": bad zstd frame");
    std::string out(size, '\0');
    const size_t got = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
    MT_CHECK(!ZSTD_isError(got) && got == size, path, ": cannot decompress");
    return out;
}

// <dir>/<name>/ with tokenizer.json and tokenizer_config.json of fixture folder `name`
// (`config` replaces the committed tokenizer_config.json when not empty).
inline std::filesystem::path make_folder(const mt::test::TempDir& dir, const std::string& name,
                                         const std::string& config = "") {
    const std::filesystem::path src = fixture(name);
    const std::filesystem::path out = dir / name;
    std::filesystem::create_directories(out);
    const std::filesystem::path json = std::filesystem::exists(src / "tokenizer.json")
                                           ? src / "tokenizer.json"
                                           : src / "tokenizer.json.zst";
    mt::test::write_file(out / "tokenizer.json", read_fixture(json));
    mt::test::write_file(out / "tokenizer_config.json",
                         config.empty() ? read_fixture(src / "tokenizer_config.json") : config);
    return out;
}

}  // namespace mt::plugins::hf_tokenizer::test
