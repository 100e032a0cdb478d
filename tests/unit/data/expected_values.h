// tests/fixtures/gpt_dataset/expected.txt (made by make_fixtures.py with Megatron-LM) as a
// key -> words map, plus the array summaries the fixture stores.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mt/data/npy.h"

namespace mt::test {

class ExpectedValues {
  public:
    static const ExpectedValues& get();  // loads once
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    // The words after the key; fails the test (empty result) when the key is missing.
    std::vector<std::string> words(const std::string& key) const;
    std::string line(const std::string& key) const;  // the whole rest of the line

  private:
    std::map<std::string, std::string> values_;
};

std::vector<std::string> split_words(const std::string& text, char sep = ' ');
std::string md5_of(const void* data, size_t bytes);

// Compares `array` with a fixture summary "descr shape md5 block-hashes first-values...": on a
// mismatch the message names the first differing block of 16 (numpy.array_split chunks).
std::string compare_array(const std::string& what, const data::NpyArray& array,
                          const std::vector<std::string>& expected);

}  // namespace mt::test
