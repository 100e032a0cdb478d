#include "task_data.h"

#include <simdjson.h>

#include <fstream>
#include <sstream>

#include "mt/error.h"

namespace mt::eval {

namespace {

std::string read_bytes(const std::filesystem::path& path) {
    MT_CHECK(std::filesystem::is_regular_file(path), "--valid-data ", path.string(),
             ": no such file");
    std::ifstream in(path, std::ios::binary);
    MT_CHECK(in.good(), "--valid-data ", path.string(), ": cannot open the file");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    MT_CHECK(!in.bad(), "--valid-data ", path.string(), ": cannot read the file");
    return std::move(bytes).str();
}

}  // namespace

std::string read_utf8_file(const std::filesystem::path& path) {
    std::string text = read_bytes(path);
    MT_CHECK(simdjson::validate_utf8(text.data(), text.size()), "--valid-data ", path.string(),
             ": not UTF-8 text");
    return text;
}

std::vector<std::string> read_lambada_texts(const std::filesystem::path& path) {
    const std::string bytes = read_bytes(path);
    std::vector<std::string> texts;
    simdjson::dom::parser parser;
    size_t begin = 0;
    for (int64_t line = 1; begin < bytes.size(); ++line) {
        size_t end = bytes.find('\n', begin);
        if (end == std::string::npos) end = bytes.size();
        const std::string_view text(bytes.data() + begin, end - begin);
        begin = end + 1;
        const std::string where = path.string() + ":" + std::to_string(line);
        simdjson::dom::element doc;
        auto error = parser.parse(text.data(), text.size(), true).get(doc);
        MT_CHECK(!error, where, ": not valid JSON (", simdjson::error_message(error), ")");
        simdjson::dom::object object;
        MT_CHECK(!doc.get_object().get(object), where, ": expected a JSON object");
        // Python's json keeps the last of duplicate keys.
        std::optional<simdjson::dom::element> value;
        for (auto field : object)
            if (field.key == "text") value = field.value;
        MT_CHECK(value.has_value(), where, ": no key 'text'");
        std::string_view s;
        MT_CHECK(!value->get_string().get(s), where, ": 'text' must be a string");
        texts.emplace_back(s);
    }
    return texts;
}

}  // namespace mt::eval
