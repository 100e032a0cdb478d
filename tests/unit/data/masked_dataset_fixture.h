// What the masked datasets' tests (BERT, T5) read from their Megatron-made fixtures
// (tests/fixtures/{bert,t5}_dataset/expected.txt: "key value..." lines) and the helpers both
// compare with.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace mt::test {

class FixtureLines {
  public:
    // The lines of tests/fixtures/<dir>/expected.txt, read once per dir.
    static const FixtureLines& of(const std::string& dir);
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    // The rest of the key's line; fails the test (empty result) when the key is missing.
    std::string line(const std::string& key) const;
    std::vector<std::string> words(const std::string& key) const;
    std::vector<int64_t> ints(const std::string& key) const;

  private:
    explicit FixtureLines(std::map<std::string, std::string> values) : values_(std::move(values)) {}
    std::map<std::string, std::string> values_;
};

// The fixtures' escaping undone: "\\n" a newline, "\\\\" a backslash.
std::string unescape(const std::string& s);
// Megatron's inv_vocab of _BertWordPieceTokenizer for a vocab file: its lines, then [BOS],
// [EOS] and `extra_ids` <extra_id_N> sentinels.
std::vector<std::string> read_inv_vocab(const std::filesystem::path& path, int extra_ids = 0);
// The values space-separated.
std::string join(const std::vector<int64_t>& v);
// Files under `dir` whose name holds `hash`, relative, sorted, with the hash written {md5}.
std::string cache_listing(const std::filesystem::path& dir, const std::string& hash);

}  // namespace mt::test
