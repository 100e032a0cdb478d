#include "json_compare.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace mt::test {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Where the two differ ("" when they do not), `path` naming the place.
std::string difference(element got, element want, const std::string& path, double tolerance) {
    const auto number = [](element e) {
        switch (e.type()) {
            case element_type::DOUBLE:
                return double(e.get_double());
            case element_type::INT64:
                return double(e.get_int64());
            default:
                return double(e.get_uint64());
        }
    };
    const auto is_number = [](element e) {
        return e.type() == element_type::DOUBLE || e.type() == element_type::INT64 ||
               e.type() == element_type::UINT64;
    };
    if (is_number(got) && is_number(want) &&
        (got.type() == element_type::DOUBLE || want.type() == element_type::DOUBLE)) {
        const double a = number(got), b = number(want);
        if (std::abs(a - b) <= tolerance * std::max(1.0, std::abs(b))) return "";
        std::ostringstream s;
        s.precision(17);
        s << path << ": " << a << " vs " << b;
        return s.str();
    }
    if (got.type() != want.type()) return path + ": another type";
    switch (want.type()) {
        case element_type::ARRAY: {
            const simdjson::dom::array a = got.get_array(), b = want.get_array();
            if (a.size() != b.size())
                return path + ": " + std::to_string(a.size()) + " items vs " +
                       std::to_string(b.size());
            size_t i = 0;
            for (auto x = a.begin(), y = b.begin(); y != b.end(); ++x, ++y, ++i)
                if (auto d = difference(*x, *y, path + "[" + std::to_string(i) + "]", tolerance);
                    !d.empty())
                    return d;
            return "";
        }
        case element_type::OBJECT: {
            // Named objects: a range-for over get_object().value() would bind to a temporary.
            const simdjson::dom::object oa = got.get_object(), ob = want.get_object();
            std::map<std::string, element> a, b;
            for (auto field : oa) a[std::string(field.key)] = field.value;
            for (auto field : ob) b[std::string(field.key)] = field.value;
            for (const auto& [key, value] : b) {
                if (!a.count(key)) return path + "." + key + ": missing";
                if (auto d = difference(a[key], value, path + "." + key, tolerance); !d.empty())
                    return d;
            }
            for (const auto& [key, value] : a)
                if (!b.count(key)) return path + "." + key + ": not expected";
            return "";
        }
        case element_type::STRING:
            return got.get_string().value() == want.get_string().value() ? "" : path + ": text";
        case element_type::BOOL:
            return got.get_bool().value() == want.get_bool().value() ? "" : path + ": boolean";
        case element_type::INT64:
            return got.get_int64().value() == want.get_int64().value() ? "" : path + ": integer";
        case element_type::UINT64:
            return got.get_uint64().value() == want.get_uint64().value() ? "" : path + ": integer";
        default:
            return "";  // null
    }
}

}  // namespace

::testing::AssertionResult json_near(const std::string& got, const std::string& want,
                                     double tolerance) {
    simdjson::dom::parser pa, pb;
    element a, b;
    if (pa.parse(got).get(a)) return ::testing::AssertionFailure() << "not JSON: " << got;
    if (pb.parse(want).get(b)) return ::testing::AssertionFailure() << "not JSON: " << want;
    const std::string d = difference(a, b, "$", tolerance);
    if (d.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << d << "\n got: " << got.substr(0, 2000) << "\nwant: " << want.substr(0, 2000);
}

}  // namespace mt::test
