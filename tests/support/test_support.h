// Helpers shared by the tests: fixture and test-data locations, temporary directories,
// whole-file reads, and running a tool binary.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mt/tensor.h"

namespace mt::test {

// tests/fixtures in the source tree.
std::filesystem::path fixtures_dir();
// The build tree (bin/, lib/mt/plugins/).
std::filesystem::path binary_dir();
// $MEGATRON_TEST_DATA (the shared third-party data), or nullopt when unset or missing.
std::optional<std::filesystem::path> test_data_dir();
// A test-data file, or nullopt (the caller skips with GTEST_SKIP() << message) when absent.
std::optional<std::filesystem::path> test_data(const std::string& relative);

// A fresh empty directory removed when the object dies.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  private:
    std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path);
// The CRC-32 of a file's bytes as 8 lower-case hex digits (zlib's, as Python's binascii.crc32).
std::string crc32_hex_of(const std::filesystem::path& path);
// A fixture's "key value..." lines as key -> the rest of the line (blank and # lines skipped);
// fails the current test when the file cannot be read.
std::map<std::string, std::string> read_fixture_values(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& content);
// Writes the first `lines` lines of `source` (each with its newline) to `path`.
void write_first_lines(const std::filesystem::path& source, int64_t lines,
                       const std::filesystem::path& path);

// Element i (flat, contiguous) of an f32, f64, i32 or i64 tensor as double (bf16: its raw
// bits), and its assignment.
double element(const Tensor& t, int64_t i);
void set_element(Tensor& t, int64_t i, double v);

// The message of the mt::Error that `fn` throws; fails the current test if it throws none.
std::string error_of(const std::function<void()>& fn);

struct RunResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr together
};
// Runs a shell command line, capturing its output.
RunResult run_command(const std::string& command_line);
// Path of bin/<name> in the build tree.
std::filesystem::path tool_path(const std::string& name);
// A path in single quotes for a shell command line.
std::string shell_quote(const std::filesystem::path& path);
// Writes `jsonl` to <dir>/corpus.jsonl and runs megatron-preprocess on it with the committed
// GPT-2 tiny vocabulary (tests/fixtures/gpt2-tiny) and --append-eod; returns the dataset prefix
// <dir>/corpus_text_document.
std::string tiny_gpt2_dataset(const TempDir& dir, const std::string& jsonl);
// " --tokenizer-type GPT2BPETokenizer --vocab-file ... --merge-file ..." of that vocabulary.
std::string tiny_gpt2_tokenizer_flags();
// `count` JSON lines {"text": "Document N says hello and then goodbye."}, N = 0 .. count-1.
std::string hello_documents(int count);
// The log-probabilities megatron-generate prints under a prompt (lines `  "<token>" <logprob>`),
// in order.
std::vector<double> printed_logprobs(const std::string& output);
// The values of "<name>: X |" in megatron-train's iteration lines ("lm loss"), in order.
std::vector<double> logged_values(const std::string& output, const std::string& name);

}  // namespace mt::test
