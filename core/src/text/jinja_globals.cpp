// The functions a chat template can call by name: Jinja's range, namespace and dict, and the two
// transformers adds, raise_exception and strftime_now.
#include <algorithm>

#include <cmath>

#include "jinja_object.h"

namespace mt::text::jinja {

namespace {

int64_t int_arg(const Value& v, const char* who) {
    if (!v.is_int())
        fail(str("'", v.type_name(), "' object cannot be interpreted as an integer in ", who));
    return v.as_int();
}

Value range(Renderer&, Args& args) {
    if (!args.keyword.empty()) fail("range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) fail(str("range expected 1 to 3 arguments, got ", p.size()));
    const int64_t start = p.size() == 1 ? 0 : int_arg(p[0], "range()");
    const int64_t stop = int_arg(p.size() == 1 ? p[0] : p[1], "range()");
    const int64_t step = p.size() == 3 ? int_arg(p[2], "range()") : 1;
    if (step == 0) fail("range() arg 3 must not be zero");
    // Counted in double: start, stop and step are any int64.
    const double n = std::max(0.0, std::ceil((double(stop) - double(start)) / double(step)));
    if (n > double(kMaxRange))
        fail(str("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange,
                 ")."));
    std::vector<Value> items;
    for (int64_t i = 0; i < int64_t(n); ++i) items.push_back(Value::integer(start + i * step));
    return Value::list(std::move(items));
}

// dict(mapping or pairs, **kwargs) as Python builds it.
Value make_dict(Args& args) {
    if (args.positional.size() > 1)
        fail(str("dict expected at most 1 argument, got ", args.positional.size()));
    Value d = Value::dict();
    if (!args.positional.empty()) {
        const Value& from = args.positional[0];
        if (from.is_dict()) {
            for (const auto& [k, v] : from.entries().entries) d.set(k, v);
        } else {
            for (const Value& pair : iterate(from)) {
                const std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2)
                    fail(str("dictionary update sequence element has length ", kv.size(),
                             "; 2 is required"));
                if (!kv[0].is_string() && !kv[0].is_number() && !kv[0].is_none())
                    fail("unhashable type: '" + kv[0].type_name() + "'");
                d.set(kv[0], kv[1]);
            }
        }
    }
    for (auto& [name, v] : args.keyword) d.set(name, v);
    return d;
}

Value dict(Renderer&, Args& args) {
    return make_dict(args);
}

Value namespace_(Renderer& renderer, Args& args) {
    const Value attributes = make_dict(args);
    auto ns = std::make_shared<Namespace>();
    for (const auto& [k, v] : attributes.entries().entries) {
        if (!k.is_string()) fail("namespace() attribute names must be strings");
        ns->set_attribute(k.as_string(), v);
    }
    renderer.adopt(ns);
    return Value::object(ns);
}

Value raise_exception(Renderer&, Args& args) {
    const Value* message = args.get(0, "message");
    throw Error("chat template raised an exception: " + (message ? message->str() : std::string()));
}

Value strftime_now(Renderer& renderer, Args& args) {
    args.check("strftime_now()", {"format"});
    const Value* format = args.get(0, "format");
    if (!format || !format->is_string()) fail("strftime_now() takes a format string");
    const std::tm now = renderer.now();
    std::string out(256 + 64 * format->as_string().size(), '\0');
    check_length(out.size());
    out.resize(std::strftime(out.data(), out.size(), format->as_string().c_str(), &now));
    return Value::string(std::move(out));
}

}  // namespace

std::optional<Value> global(const std::string& name) {
    static const std::vector<std::pair<std::string, Value>> globals = [] {
        std::vector<std::pair<std::string, Value>> g;
        for (auto [n, f] : std::initializer_list<std::pair<const char*, Builtin::Function>>{
                 {"range", range},
                 {"dict", dict},
                 {"namespace", namespace_},
                 {"raise_exception", raise_exception},
                 {"strftime_now", strftime_now}})
            g.emplace_back(n, Value::object(std::make_shared<Builtin>(n, f)));
        return g;
    }();
    for (const auto& [n, v] : globals)
        if (n == name) return v;
    return std::nullopt;
}

}  // namespace mt::text::jinja
