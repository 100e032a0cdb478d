// Helpers shared by the GPT2BPETokenizer tests: fixture loading (simdjson), the real GPT-2
// tokenizer from MEGATRON_TEST_DATA, and the FNV-1a digest make_fixtures.py also computes.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpt2bpe_tokenizer.h"
#include "test_support.h"

namespace mt::plugins::gpt2bpe::test {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "gpt2bpe" / name;
}

inline std::vector<int32_t> int_list(simdjson::dom::element e) {
    std::vector<int32_t> out;
    for (simdjson::dom::element x : e.get_array()) out.push_back(int32_t(int64_t(x)));
    return out;
}

inline std::string string_of(simdjson::dom::element e) {
    return std::string(std::string_view(e));
}

// A tokenizer from two files under MEGATRON_TEST_DATA, or nullptr when the data is absent.
inline std::unique_ptr<Gpt2BpeTokenizer> data_tokenizer(const std::string& vocab,
                                                        const std::string& merges) {
    auto v = mt::test::test_data(vocab);
    auto m = mt::test::test_data(merges);
    if (!v || !m) return nullptr;
    TokenizerOptions o;
    o.vocab_file = v->string();
    o.merge_file = m->string();
    return std::make_unique<Gpt2BpeTokenizer>(o);
}

inline std::unique_ptr<Gpt2BpeTokenizer> gpt2_tokenizer() {
    return data_tokenizer("gpt2/gpt2-vocab.json", "gpt2/gpt2-merges.txt");
}

}  // namespace mt::plugins::gpt2bpe::test
