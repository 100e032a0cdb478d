// Helpers of the libFuzzer targets: an input written to a file of its own (for the readers that
// map files), and the committed fixtures' location. A target calls the real reader and lets
// mt::Error pass (a clean refusal); crashes, sanitizer reports, leaks and timeouts are findings.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

namespace mt::fuzz {

inline std::filesystem::path source_dir() {
    return MT_FUZZ_SOURCE_DIR;
}

// This process's folder for its inputs (under TMPDIR), made once.
inline const std::filesystem::path& input_root() {
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("mt_fuzz_" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

// A file for this process's inputs: "input" + `suffix` under input_root() ("/name" puts a file
// of that name in the input folder, input_root() / "input"), rewritten with `bytes` on each call.
inline std::filesystem::path write_input(std::string_view bytes, const std::string& suffix = "") {
    const std::filesystem::path path = input_root() / ("input" + suffix);
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

// An input holding two files: its first two bytes (little-endian) give the first one's length
// (cut to what there is), the rest follows. Nothing for an input under two bytes.
inline std::optional<std::pair<std::string_view, std::string_view>> split_two(const uint8_t* data,
                                                                              size_t size) {
    if (size < 2) return std::nullopt;
    const std::string_view rest = as_text(data + 2, size - 2);
    const size_t first = std::min<size_t>(rest.size(), size_t(data[0]) | size_t(data[1]) << 8);
    return std::pair(rest.substr(0, first), rest.substr(first));
}

// The committed fixture folder `fixture` (a path in tests/fixtures) copied into `to`, its
// subfolders too, but for the file `replaced` (a path in it), which the target writes each time.
inline void copy_fixture_but(const std::string& fixture, const std::filesystem::path& to,
                             const std::string& replaced) {
    namespace fs = std::filesystem;
    const fs::path from = source_dir() / "tests/fixtures" / fixture;
    fs::create_directories(to);
    for (const auto& entry : fs::recursive_directory_iterator(from)) {
        const fs::path relative = entry.path().lexically_relative(from);
        if (entry.is_directory())
            fs::create_directories(to / relative);
        else if (relative != fs::path(replaced))
            fs::copy_file(entry.path(), to / relative, fs::copy_options::overwrite_existing);
    }
}

// The deepspeed format's load of a copy of the committed Megatron-DeepSpeed tag folder `fixture`
// (a path in tests/fixtures, copied on the first call: one fixture per target) whose file
// `fuzzed` (a path in it) is `input`; mt::Error passes.
inline void load_deepspeed_with(std::string_view input, const std::string& fixture,
                                const std::string& fuzzed) {
    static const auto format = Registry::global().create_checkpoint("deepspeed");
    static const std::filesystem::path dir = [&] {
        const std::filesystem::path d = input_root() / "input" / "tag";
        copy_fixture_but(fixture, d, fuzzed);
        return d;
    }();
    write_input(input, "/tag/" + fuzzed);
    try {
        format->load(dir);
    } catch (const Error&) {
    }
}

// A committed torch_dist iteration folder `iteration` (a path in tests/fixtures ending in
// iter_NNNNNNN; default the gpt2_tp1 checkpoint's) copied once into this process's input folder
// with its tracker, but for its file `replaced`, which the target writes each time; returns the
// checkpoint folder to load.
inline std::filesystem::path torch_dist_fixture_but(
    const std::string& replaced,
    const std::string& iteration = "torch_dist/gpt2_tp1/iter_0000007") {
    const std::string name = std::filesystem::path(iteration).filename().string();
    const std::filesystem::path d =
        write_input(std::to_string(std::stoll(name.substr(name.find('_') + 1))),
                    "/latest_checkpointed_iteration.txt")
            .parent_path();
    copy_fixture_but(iteration, d / name, replaced);
    return d;
}

// The torch_dist format's load of that copy of `iteration` (one per target) whose file `fuzzed`
// is `input`; mt::Error passes.
inline void load_torch_dist_with(std::string_view input, const std::string& iteration,
                                 const std::string& fuzzed) {
    static const auto format = Registry::global().create_checkpoint("torch_dist");
    static const std::filesystem::path dir = torch_dist_fixture_but(fuzzed, iteration);
    write_input(input, "/" + std::filesystem::path(iteration).filename().string() + "/" + fuzzed);
    try {
        format->load(dir);
    } catch (const Error&) {
    }
}

// GPT2BPETokenizer over the committed 5000-entry vocabulary (tests/fixtures/gpt2-tiny).
// core_v0_19: core_v0.19's class, with two added special tokens (one a piece of <|endoftext|>
// that the longest match must not take apart) found in the text.
inline const Tokenizer& tiny_gpt2_tokenizer(bool core_v0_19 = false) {
    const auto make = [](bool core) {
        TokenizerOptions o;
        o.vocab_file = (source_dir() / "tests/fixtures/gpt2-tiny/vocab.json").string();
        o.merge_file = (source_dir() / "tests/fixtures/gpt2-tiny/merges.txt").string();
        if (core) {
            o.classes = TokenizerOptions::Classes::core_v0_19;
            o.special_tokens = std::vector<std::string>{"<|im_start|>", "<|endof"};
        }
        return Registry::global().create_tokenizer("GPT2BPETokenizer", o);
    };
    static const auto v013 = make(false), v019 = make(true);
    return core_v0_19 ? *v019 : *v013;
}

}  // namespace mt::fuzz
