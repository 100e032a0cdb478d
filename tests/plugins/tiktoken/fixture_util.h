// Shared by the TikTokenizer tests: the committed fixtures of tests/fixtures/tiktoken and the
// options a fixture's Megatron flags stand for.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mt/tokenizer.h"
#include "test_support.h"
#include "zstd_file.h"

namespace mt::plugins::tiktoken::test {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "tiktoken" / name;
}

inline std::vector<int32_t> ids_of(simdjson::dom::element e) {
    std::vector<int32_t> ids;
    for (auto v : e.get_array()) ids.push_back(int32_t(int64_t(v)));
    return ids;
}

// make_fixtures.py's flags (Megatron's argument names) over `model` (special_tokens:
// core_v0.19's --tokenizer-special-tokens).
inline TokenizerOptions options_of(simdjson::dom::object flags, const std::string& model) {
    TokenizerOptions o;
    o.tokenizer_model = model;
    for (auto field : flags) {
        if (field.key == "tiktoken_pattern") {
            o.tiktoken_pattern = std::string(std::string_view(field.value));
        } else if (field.key == "vocab_size") {
            o.vocab_size = int64_t(field.value);
        } else if (field.key == "tiktoken_num_special_tokens") {
            o.tiktoken_num_special_tokens = int64_t(field.value);
        } else if (field.key == "tiktoken_special_tokens" || field.key == "special_tokens") {
            auto& tokens =
                field.key == "special_tokens" ? o.special_tokens : o.tiktoken_special_tokens;
            tokens.emplace();
            for (auto t : field.value.get_array()) tokens->emplace_back(std::string_view(t));
        } else {
            ADD_FAILURE() << "unknown flag " << field.key;
        }
    }
    return o;
}

}  // namespace mt::plugins::tiktoken::test
