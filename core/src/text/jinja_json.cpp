// JSON in and out of Jinja values: the context as Python's json.loads reads it, and the tojson
// filter as transformers defines it (json.dumps, ensure_ascii=False by default).
#include <simdjson.h>

#include <algorithm>

#include "jinja_object.h"
#include "mt/data/dataset_description.h"
#include "mt/io/json_writer.h"

namespace mt::text::jinja {

namespace {

Value from_element(simdjson::dom::element e) {
    using T = simdjson::dom::element_type;
    switch (e.type()) {
        case T::ARRAY: {
            simdjson::dom::array array;
            if (e.get_array().get(array)) fail("bad JSON array");
            std::vector<Value> items;
            for (simdjson::dom::element item : array) items.push_back(from_element(item));
            return Value::list(std::move(items));
        }
        case T::OBJECT: {
            simdjson::dom::object object;
            if (e.get_object().get(object)) fail("bad JSON object");
            Value d = Value::dict();
            for (auto field : object) d.set(std::string(field.key), from_element(field.value));
            return d;
        }
        case T::INT64:
            return Value::integer(e.get_int64().value_unsafe());
        case T::UINT64:
            fail(str("JSON integer ", e.get_uint64().value_unsafe(), " is out of range"));
        case T::DOUBLE:
            return Value::real(e.get_double().value_unsafe());
        case T::STRING:
            return Value::string(std::string(e.get_string().value_unsafe()));
        case T::BOOL:
            return Value::boolean(e.get_bool().value_unsafe());
        case T::NULL_VALUE:
            return Value::none();
    }
    return Value::none();
}

std::string key_text(const Value& key) {
    switch (key.kind()) {
        case Value::Kind::string:
            return key.as_string();
        case Value::Kind::integer:
            return key.str();
        case Value::Kind::real:  // json.dumps's spelling (NaN, Infinity)
            return data::python_float_repr(key.as_real());
        case Value::Kind::boolean:
            return key.as_int() ? "true" : "false";
        case Value::Kind::none:
            return "null";
        default:
            fail("keys must be str, int, float, bool or None, not " + key.type_name());
    }
}

class Writer {
  public:
    Writer(const JsonOptions& o) : o_(o) {}

    void write(const Value& v, size_t level) {
        check_length(out.size());
        switch (v.kind()) {
            case Value::Kind::none:
                out += "null";
                return;
            case Value::Kind::boolean:
                out += v.as_int() ? "true" : "false";
                return;
            case Value::Kind::integer:
                out += v.str();
                return;
            case Value::Kind::real:
                out += key_text(v);
                return;
            case Value::Kind::string:
                out += io::json_quote(v.as_string(), o_.ensure_ascii);
                return;
            case Value::Kind::list:
            case Value::Kind::tuple: {
                if (v.items().empty()) {
                    out += "[]";
                    return;
                }
                out += '[';
                for (size_t i = 0; i < v.items().size(); ++i) {
                    if (i) out += o_.item_separator;
                    newline(level + 1);
                    write(v.items()[i], level + 1);
                }
                newline(level);
                out += ']';
                return;
            }
            case Value::Kind::dict: {
                const auto& entries = v.entries().entries;
                if (entries.empty()) {
                    out += "{}";
                    return;
                }
                std::vector<const std::pair<Value, Value>*> order;
                for (const auto& entry : entries) order.push_back(&entry);
                if (o_.sort_keys)
                    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
                        return python_less(a->first, b->first);
                    });
                out += '{';
                for (size_t i = 0; i < order.size(); ++i) {
                    if (i) out += o_.item_separator;
                    newline(level + 1);
                    out += io::json_quote(key_text(order[i]->first), o_.ensure_ascii);
                    out += o_.key_separator;
                    write(order[i]->second, level + 1);
                }
                newline(level);
                out += '}';
                return;
            }
            default:
                fail("Object of type " + v.type_name() + " is not JSON serializable");
        }
    }

    std::string out;

  private:
    void newline(size_t level) {
        if (!o_.indent) return;
        out += '\n';
        for (size_t i = 0; i < level; ++i) out += *o_.indent;
        check_length(out.size());
    }

    const JsonOptions& o_;
};

}  // namespace

Value Value::from_json(std::string_view json) {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(json);
    simdjson::dom::element root;
    const auto error = parser.parse(padded).get(root);
    if (error)
        throw Error(std::string("chat template variables: invalid JSON: ") +
                    simdjson::error_message(error));
    return from_element(root);
}

std::string to_json(const Value& value, const JsonOptions& options) {
    Writer w(options);
    w.write(value, 0);
    return std::move(w.out);
}

}  // namespace mt::text::jinja
