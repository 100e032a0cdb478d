#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "mt/error.h"
#include "mt/io/crc32.h"

namespace fs = std::filesystem;

namespace mt::test {

fs::path fixtures_dir() {
    return fs::path(MT_TEST_SOURCE_DIR) / "tests" / "fixtures";
}
fs::path binary_dir() {
    return fs::path(MT_TEST_BINARY_DIR);
}

std::optional<fs::path> test_data_dir() {
    const char* env = std::getenv("MEGATRON_TEST_DATA");
    if (!env || !*env || !fs::is_directory(env)) return std::nullopt;
    return fs::path(env);
}

std::optional<fs::path> test_data(const std::string& relative) {
    auto dir = test_data_dir();
    if (!dir || !fs::exists(*dir / relative)) return std::nullopt;
    return *dir / relative;
}

TempDir::TempDir() {
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
        fs::path p = fs::temp_directory_path() /
                     ("mt-test-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
        if (fs::create_directory(p)) {
            path_ = p;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_first_lines(const fs::path& source, int64_t lines, const fs::path& path) {
    std::ifstream in(source);
    if (!in) throw std::runtime_error("cannot read " + source.string());
    std::string text, line;
    for (int64_t i = 0; i < lines && std::getline(in, line); ++i) text += line + "\n";
    write_file(path, text);
}

std::string crc32_hex_of(const fs::path& path) {
    const std::string data = read_file(path);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", unsigned(io::crc32_update(0, data.data(), data.size())));
    return hex;
}

std::map<std::string, std::string> read_fixture_values(const fs::path& path) {
    std::map<std::string, std::string> values;
    std::ifstream in(path);
    EXPECT_TRUE(in) << "cannot read " << path;
    for (std::string l; std::getline(in, l);) {
        if (l.empty() || l[0] == '#') continue;
        const size_t space = l.find(' ');
        values[l.substr(0, space)] = space == std::string::npos ? "" : l.substr(space + 1);
    }
    return values;
}

void write_file(const fs::path& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

double element(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
        case DType::f32:
            return t.data<float>()[i];
        case DType::f64:
            return t.data<double>()[i];
        case DType::i32:
            return t.data<int32_t>()[i];
        case DType::i64:
            return double(t.data<int64_t>()[i]);
        case DType::bf16:  // the raw bits, for tests that move bytes
            return static_cast<const uint16_t*>(t.raw_data())[i];
        default:
            MT_FAIL("test: element of a ", mt::dtype_name(t.dtype()), " tensor");
    }
}

void set_element(Tensor& t, int64_t i, double v) {
    switch (t.dtype()) {
        case DType::f32:
            t.data<float>()[i] = float(v);
            break;
        case DType::f64:
            t.data<double>()[i] = v;
            break;
        case DType::i32:
            t.data<int32_t>()[i] = int32_t(v);
            break;
        case DType::i64:
            t.data<int64_t>()[i] = int64_t(v);
            break;
        case DType::bf16:
            static_cast<uint16_t*>(t.raw_data())[i] = uint16_t(v);
            break;
        default:
            MT_FAIL("test: element of a ", mt::dtype_name(t.dtype()), " tensor");
    }
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const mt::Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an mt::Error";
    return {};
}

RunResult run_command(const std::string& command_line) {
    RunResult r;
    std::string cmd = command_line + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + command_line);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
    int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

fs::path tool_path(const std::string& name) {
    return binary_dir() / "bin" / name;
}

std::string shell_quote(const fs::path& path) {
    return "'" + path.string() + "'";
}

std::string tiny_gpt2_tokenizer_flags() {
    const fs::path vocab = fixtures_dir() / "gpt2-tiny";
    return " --tokenizer-type GPT2BPETokenizer --vocab-file " + shell_quote(vocab / "vocab.json") +
           " --merge-file " + shell_quote(vocab / "merges.txt");
}

std::string hello_documents(int count) {
    std::string jsonl;
    for (int d = 0; d < count; ++d)
        jsonl +=
            "{\"text\": \"Document " + std::to_string(d) + " says hello and then goodbye.\"}\n";
    return jsonl;
}

std::string tiny_gpt2_dataset(const TempDir& dir, const std::string& jsonl) {
    write_file(dir / "corpus.jsonl", jsonl);
    RunResult r =
        run_command(tool_path("megatron-preprocess").string() + " --input " +
                    shell_quote(dir / "corpus.jsonl") + " --output-prefix " +
                    shell_quote(dir / "corpus") + tiny_gpt2_tokenizer_flags() + " --append-eod");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return (dir / "corpus_text_document").string();
}

std::vector<double> printed_logprobs(const std::string& output) {
    std::vector<double> out;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with("  \"")) out.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
    return out;
}

std::vector<double> logged_values(const std::string& output, const std::string& name) {
    std::vector<double> values;
    const std::regex value(" " + name + ": ([0-9.E+-]+) \\|");
    for (auto it = std::sregex_iterator(output.begin(), output.end(), value);
         it != std::sregex_iterator(); ++it)
        values.push_back(std::stod((*it)[1]));
    return values;
}

}  // namespace mt::test
