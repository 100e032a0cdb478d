// Shared by the HuggingFaceTokenizer tests: tokenizer folders made from the committed fixtures.
#pragma once

#include <filesystem>
#include <string>

#include "test_support.h"
#include "zstd_file.h"

namespace mt::plugins::hf_tokenizer::test {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "hf_tokenizer" / name;
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
    mt::test::write_file(out / "tokenizer.json", mt::test::read_maybe_zstd(json));
    mt::test::write_file(
        out / "tokenizer_config.json",
        config.empty() ? mt::test::read_maybe_zstd(src / "tokenizer_config.json") : config);
    return out;
}

}  // namespace mt::plugins::hf_tokenizer::test
