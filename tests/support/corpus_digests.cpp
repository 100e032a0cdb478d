#include "corpus_digests.h"

#include <simdjson.h>

#include <cstdio>

#include "test_support.h"

namespace mt::test {

std::vector<std::string> corpus_documents(const std::filesystem::path& path) {
    std::vector<std::string> docs;
    if (path.extension() == ".jsonl") {
        simdjson::dom::parser parser;
        simdjson::padded_string data = simdjson::padded_string::load(path.string());
        for (simdjson::dom::element doc : parser.parse_many(data))
            docs.emplace_back(std::string_view(doc["text"]));
        return docs;
    }
    const std::string text = read_file(path);
    size_t start = 0;
    while (start < text.size()) {
        const size_t nl = text.find('\n', start);
        const size_t end = nl == std::string::npos ? text.size() : nl + 1;
        docs.push_back(text.substr(start, end - start));
        start = end;
    }
    return docs;
}

uint64_t fnv1a64(const std::vector<int32_t>& ids) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (int32_t id : ids) {
        const uint32_t u = uint32_t(id);
        for (int k = 0; k < 4; ++k) {
            h ^= (u >> (8 * k)) & 0xFF;
            h *= 0x100000001B3ull;
        }
    }
    return h;
}

std::string fnv1a64_hex(const std::vector<int32_t>& ids) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(ids)));
    return hex;
}

}  // namespace mt::test
