#include "tiktoken_vocab.h"

#include <simdjson.h>

#include <string_view>
#include <unordered_set>

#include "mt/error.h"

namespace mt::plugins::tiktoken {

namespace {

// base64.b64decode of a well-formed string (the standard alphabet with '=' padding); anything
// else is an mt::Error (Python would drop stray characters first).
bool base64_decode(std::string_view in, std::string& out) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    out.clear();
    if (in.size() % 4 != 0) return false;
    for (size_t i = 0; i < in.size(); i += 4) {
        const bool last = i + 4 == in.size();
        const size_t pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
        uint32_t bits = 0;
        for (size_t k = 0; k < 4; ++k) {
            const int v = k >= 4 - pad ? 0 : value(in[i + k]);
            if (v < 0) return false;
            bits = (bits << 6) | uint32_t(v);
        }
        out += char(bits >> 16);
        if (pad < 2) out += char((bits >> 8) & 0xFF);
        if (pad < 1) out += char(bits & 0xFF);
    }
    return true;
}

}  // namespace

std::vector<std::string> read_tiktoken_ranks(const std::string& path, size_t max_ranks) {
    MT_CHECK(path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0,
             "TikTokenizer: --tokenizer-model ", path,
             " is not a .json file (Megatron's TikTokenizer reads its JSON vocabulary)");
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    auto error = parser.load(path).get(root);
    MT_CHECK(!error, "TikTokenizer: cannot read ", path, ": ", simdjson::error_message(error));
    simdjson::dom::array list;
    MT_CHECK(!root.get_array().get(list), path, ": not a JSON list of tokens");

    std::vector<std::string> ranks;
    std::unordered_set<std::string_view> seen;
    std::string bytes;
    for (simdjson::dom::element item : list) {
        const size_t i = ranks.size();
        if (i == max_ranks) break;
        simdjson::dom::object entry;
        MT_CHECK(!item.get_object().get(entry), path, ": entry ", i, " is not an object");
        size_t keys = 0;
        int64_t rank = -1;
        std::string_view token_bytes;
        bool has_bytes = false, has_str = false;
        for (auto field : entry) {
            ++keys;
            if (field.key == "rank") {
                MT_CHECK(!field.value.get_int64().get(rank), path, ": entry ", i,
                         ": rank is not an integer");
            } else if (field.key == "token_bytes") {
                has_bytes = true;
                MT_CHECK(!field.value.get_string().get(token_bytes), path, ": entry ", i,
                         ": token_bytes is not a string");
            } else {
                has_str = has_str || field.key == "token_str";
            }
        }
        MT_CHECK(keys == 3 && has_str && has_bytes && rank >= 0, path, ": entry ", i,
                 " does not have exactly the keys rank, token_bytes and token_str");
        MT_CHECK(rank == int64_t(i), path, ": entry ", i, " has rank ", rank);
        MT_CHECK(base64_decode(token_bytes, bytes), path, ": entry ", i,
                 ": token_bytes is not base64: '", token_bytes, "'");
        MT_CHECK(i >= 256 || bytes == std::string(1, char(i)), path, ": rank ", i,
                 " is not the byte ", i, " (the first 256 ranks are the single bytes)");
        ranks.push_back(bytes);
    }
    for (size_t i = 0; i < ranks.size(); ++i)
        MT_CHECK(seen.insert(ranks[i]).second, path, ": rank ", i, " repeats the bytes of another");
    return ranks;
}

}  // namespace mt::plugins::tiktoken
