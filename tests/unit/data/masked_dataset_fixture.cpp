#include "masked_dataset_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "test_support.h"

namespace mt::test {

namespace fs = std::filesystem;

const FixtureLines& FixtureLines::of(const std::string& dir) {
    static std::map<std::string, std::unique_ptr<FixtureLines>> loaded;
    auto& slot = loaded[dir];
    if (!slot)
        slot.reset(new FixtureLines(read_fixture_values(fixtures_dir() / dir / "expected.txt")));
    return *slot;
}

std::string FixtureLines::line(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) {
        ADD_FAILURE() << "expected.txt has no " << key;
        return {};
    }
    return it->second;
}

std::vector<std::string> FixtureLines::words(const std::string& key) const {
    std::istringstream in(line(key));
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::vector<int64_t> FixtureLines::ints(const std::string& key) const {
    std::vector<int64_t> out;
    for (const auto& w : words(key)) out.push_back(std::stoll(w));
    return out;
}

std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            ++i;
            out += s[i] == 'n' ? '\n' : s[i];
        } else {
            out += s[i];
        }
    }
    return out;
}

std::vector<std::string> read_inv_vocab(const fs::path& path, int extra_ids) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> pieces;
    for (std::string l; std::getline(in, l);) {
        size_t b = l.find_first_not_of(" \t\r\n"), e = l.find_last_not_of(" \t\r\n");
        pieces.push_back(b == std::string::npos ? "" : l.substr(b, e - b + 1));
    }
    pieces.push_back("[BOS]");
    pieces.push_back("[EOS]");
    for (int i = 0; i < extra_ids; ++i) pieces.push_back("<extra_id_" + std::to_string(i) + ">");
    return pieces;
}

std::string join(const std::vector<int64_t>& v) {
    std::string out;
    for (int64_t x : v) out += (out.empty() ? "" : " ") + std::to_string(x);
    return out;
}

std::string cache_listing(const fs::path& dir, const std::string& hash) {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        std::string rel = fs::relative(entry.path(), dir).string();
        if (!entry.is_regular_file() ||
            entry.path().filename().string().find(hash) == std::string::npos)
            continue;
        rel.replace(rel.find(hash), hash.size(), "{md5}");
        found.push_back(rel);
    }
    std::sort(found.begin(), found.end());
    std::string out;
    for (const auto& f : found) out += (out.empty() ? "" : " ") + f;
    return out;
}

}  // namespace mt::test
