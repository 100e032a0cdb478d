#include "expected_values.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "mt/data/dataset_description.h"
#include "test_support.h"

namespace mt::test {

const ExpectedValues& ExpectedValues::get() {
    static const ExpectedValues values = [] {
        ExpectedValues v;
        v.values_ = read_fixture_values(fixtures_dir() / "gpt_dataset" / "expected.txt");
        return v;
    }();
    return values;
}

std::string ExpectedValues::line(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) {
        ADD_FAILURE() << "expected.txt has no key " << key;
        return {};
    }
    return it->second;
}

std::vector<std::string> ExpectedValues::words(const std::string& key) const {
    return split_words(line(key));
}

std::vector<std::string> split_words(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::string word;
    std::istringstream in(text);
    while (std::getline(in, word, sep)) {
        if (!word.empty()) out.push_back(word);
    }
    return out;
}

std::string md5_of(const void* data, size_t bytes) {
    return data::md5_hex(std::string(static_cast<const char*>(data), bytes));
}

std::string compare_array(const std::string& what, const data::NpyArray& array,
                          const std::vector<std::string>& expected) {
    if (expected.size() < 4) return what + ": malformed fixture entry";
    std::string shape;
    for (size_t i = 0; i < array.shape().size(); ++i) {
        shape += (i ? "x" : "") + std::to_string(array.shape()[i]);
    }
    std::ostringstream msg;
    if (expected[0] != data::npy_type_descr(array.type()) || expected[1] != shape) {
        msg << what << ": dtype/shape " << data::npy_type_descr(array.type()) << " " << shape
            << ", Megatron has " << expected[0] << " " << expected[1];
        return msg.str();
    }
    if (md5_of(array.bytes(), array.nbytes()) == expected[2]) return {};
    // Locate the first differing chunk of numpy.array_split(flat, 16).
    std::vector<std::string> blocks = split_words(expected[3], ',');
    int64_t n = array.numel(), item = data::npy_type_size(array.type()), begin = 0;
    for (int64_t b = 0; b < 16 && b < static_cast<int64_t>(blocks.size()); ++b) {
        int64_t len = n / 16 + (b < n % 16 ? 1 : 0);
        if (md5_of(array.bytes() + begin * item, len * item).substr(0, 8) != blocks[b]) {
            msg << what << ": differs from Megatron in flat elements [" << begin << ", "
                << begin + len << ")";
            break;
        }
        begin += len;
    }
    msg << "; first values ours:";
    for (int64_t i = 0; i < std::min<int64_t>(8, n); ++i) msg << " " << array.at(i);
    msg << " Megatron:";
    for (size_t i = 4; i < expected.size(); ++i) msg << " " << expected[i];
    return msg.str();
}

}  // namespace mt::test
