#include "hf_json.h"

#include "mt/data/dataset_description.h"
#include "mt/io/json_writer.h"

namespace mt::plugins::hf::json {

namespace {

std::string indent(int depth) {
    return std::string(size_t(2 * depth), ' ');
}

}  // namespace

std::string object(const Members& members, int depth) {
    if (members.empty()) return "{}";
    std::string out = "{\n";
    size_t i = 0;
    for (const auto& [key, value] : members)
        out += indent(depth + 1) + io::json_quote(key) + ": " + value +
               (++i < members.size() ? ",\n" : "\n");
    return out + indent(depth) + "}";
}

std::string strings(const std::vector<std::string>& items, int depth) {
    if (items.empty()) return "[]";
    std::string out = "[\n";
    for (size_t i = 0; i < items.size(); ++i)
        out += indent(depth + 1) + io::json_quote(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
    return out + indent(depth) + "]";
}

std::string integer(int64_t v) {
    return std::to_string(v);
}
std::string real(double v) {
    return data::python_float_repr(v);
}
std::string boolean(bool v) {
    return v ? "true" : "false";
}
std::string text(const std::string& v) {
    return io::json_quote(v);
}

}  // namespace mt::plugins::hf::json
