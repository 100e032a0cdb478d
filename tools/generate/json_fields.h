// Reading a request's JSON object the way the Python servers' isinstance tests do: an integer
// is not a float ("top_p": 1 is not 1.0 for Megatron's PUT /api), a boolean is neither, and a
// missing member differs from a null one.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mt/error.h"

namespace mt::generate_tool::json {

using simdjson::dom::element;
using simdjson::dom::element_type;

inline bool is_int(element e) {
    return e.type() == element_type::INT64 || e.type() == element_type::UINT64;
}
inline bool is_float(element e) {
    return e.type() == element_type::DOUBLE;
}
inline bool is_number(element e) {
    return is_int(e) || is_float(e);
}
inline bool is_bool(element e) {
    return e.type() == element_type::BOOL;
}
inline bool is_null(element e) {
    return e.type() == element_type::NULL_VALUE;
}
inline double number(element e) {
    if (e.type() == element_type::INT64) return double(int64_t(e));
    if (e.type() == element_type::UINT64) return double(uint64_t(e));
    return double(e);
}
// A JSON integer that may not fit int64 (UINT64): large values saturate, which every range
// check then rejects or clamps as Python's unbounded ints would.
inline int64_t integer(element e) {
    if (e.type() == element_type::UINT64) {
        const uint64_t u = uint64_t(e);
        return u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
    }
    return int64_t(e);
}

class Fields {
  public:
    explicit Fields(simdjson::dom::object o) : o_(o) {}
    std::optional<element> get(const char* key) const {
        element e;
        if (o_.at_key(key).get(e)) return std::nullopt;
        return e;
    }
    // Present and not null (OpenAI's clients send null for "not given").
    std::optional<element> given(const char* key) const {
        auto e = get(key);
        if (e && is_null(*e)) return std::nullopt;
        return e;
    }
    bool has(const char* key) const { return get(key).has_value(); }

  private:
    simdjson::dom::object o_;
};

// read(Fields) on the body's top-level object (a variant of the request and a message), or the
// message for a body that is not a JSON object.
template <class Read>
auto read_object(std::string_view body, Read read) -> decltype(read(std::declval<Fields>())) {
    simdjson::dom::parser parser;
    simdjson::padded_string text(body);
    element doc;
    if (auto error = parser.parse(text).get(doc))
        return std::string("Failed to decode JSON object: ") + simdjson::error_message(error);
    if (doc.type() != element_type::OBJECT) return "the request body must be a JSON object";
    return read(Fields(simdjson::dom::object(doc)));
}

// A JSON array of token ids below `vocab_size`, or the message naming `what` ("prompt 1").
inline std::variant<std::vector<int32_t>, std::string> read_token_ids(simdjson::dom::array items,
                                                                      int64_t vocab_size,
                                                                      const std::string& what) {
    std::vector<int32_t> ids;
    for (element item : items) {
        if (!is_int(item)) return what + " must be a list of token ids";
        const int64_t id = integer(item);
        if (id < 0 || id >= vocab_size)
            return mt::str(what, " has token id ", id, " at position ", ids.size(),
                           ", outside the vocabulary [0, ", vocab_size, ")");
        ids.push_back(int32_t(id));
    }
    return ids;
}

}  // namespace mt::generate_tool::json
