// What the hf plugin's tests read from tests/fixtures/hf: a folder by name, and the id rows of
// its expected.json files.
#pragma once

#include <simdjson.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mt/tensor.h"
#include "test_support.h"

namespace mt::plugins::hf {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "hf" / name;
}

// A JSON array of equally long id rows as an i64 [rows, length] tensor.
inline Tensor ids(simdjson::dom::array rows) {
    std::vector<int64_t> v;
    int64_t n = 0;
    for (auto row : rows) {
        ++n;
        for (auto x : row.get_array()) v.push_back(x.get_int64());
    }
    Tensor t = Tensor::empty({n, int64_t(v.size()) / n}, DType::i64);
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
}

}  // namespace mt::plugins::hf
