// Attribute and item access and the methods of str, dict and list, as jinja2's immutable sandbox
// allows them: reading methods work, mutating ones (list.append, dict.update) are refused the
// way the sandbox refuses them, str.format and the rarer methods are refused by name.
#include <algorithm>

#include "jinja_object.h"

namespace mt::text::jinja {

namespace {

bool listed(const std::string& name, std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

// The methods this engine calls, and the other methods Python's types have (refused by name when
// called, instead of reading as undefined).
constexpr std::initializer_list<const char*> kStrMethods = {
    "strip",   "lstrip",  "rstrip",  "split",      "rsplit",       "startswith",  "endswith",
    "upper",   "lower",   "title",   "capitalize", "replace",      "find",        "rfind",
    "index",   "rindex",  "count",   "splitlines", "join",         "isdigit",     "isalpha",
    "isalnum", "isspace", "islower", "isupper",    "removeprefix", "removesuffix"};
constexpr std::initializer_list<const char*> kOtherStrMethods = {
    "format",     "format_map", "center",       "ljust",       "rjust",   "zfill",     "partition",
    "rpartition", "swapcase",   "casefold",     "expandtabs",  "encode",  "translate", "maketrans",
    "isnumeric",  "isdecimal",  "isidentifier", "isprintable", "istitle", "isascii"};
constexpr std::initializer_list<const char*> kDictMethods = {"items", "keys", "values", "get",
                                                             "copy"};
constexpr std::initializer_list<const char*> kDictMutators = {"pop",    "popitem", "setdefault",
                                                              "update", "clear",   "fromkeys"};
constexpr std::initializer_list<const char*> kListMethods = {"index", "count", "copy"};
constexpr std::initializer_list<const char*> kListMutators = {
    "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

Value unsafe(const Value& obj, const std::string& name) {
    return Value::undefined(
        str("access to attribute ", quoted(name), " of '", obj.type_name(), "' object is unsafe."));
}

Value method(const Value& obj, const std::string& name) {
    return Value::object(std::make_shared<Method>(obj, name));
}

const std::string& str_arg(const Value* v, const char* who) {
    if (!v || !v->is_string())
        fail(str(who, " takes a str argument, not ", v ? v->type_name() : "nothing"));
    return v->as_string();
}

int64_t int_arg(const Value* v, int64_t fallback, const char* who) {
    if (!v || v->is_none()) return fallback;
    if (!v->is_int()) fail(str(who, " takes an int argument, not ", v->type_name()));
    return v->as_int();
}

Value strings(const std::vector<std::string>& parts) {
    std::vector<Value> items;
    for (const std::string& p : parts) items.push_back(Value::string(p));
    return Value::list(std::move(items));
}

// A str predicate over its code points (isdigit and friends), false for "".
template <class Pred>
bool all_chars(const std::string& s, Pred pred) {
    if (s.empty()) return false;
    for (const Value& c : iterate(Value::string(s)))
        if (!pred(c.as_string())) return false;
    return true;
}

Value string_method(const std::string& s, const std::string& name, Args& a) {
    if (listed(name, kOtherStrMethods)) fail("not supported: method str." + name);
    const std::string who = "str." + name + "()";
    const char* w = who.c_str();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        a.check(w, {"chars"});
        return Value::string(
            python_strip(s, a.get(0, "chars"), name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        a.check(w, {"sep", "maxsplit"});
        return strings(python_split(s, a.get(0, "sep"), int_arg(a.get(1, "maxsplit"), -1, w),
                                    name == "rsplit"));
    }
    if (name == "startswith" || name == "endswith") {
        a.check(w, {"prefix"});
        const Value* p = a.get(0, "prefix");
        std::vector<Value> options =
            p && p->kind() == Value::Kind::tuple ? p->items() : std::vector<Value>{};
        if (options.empty() && p) options.push_back(*p);
        for (const Value& o : options)
            if (name == "startswith" ? s.starts_with(str_arg(&o, w)) : s.ends_with(str_arg(&o, w)))
                return Value::boolean(true);
        return Value::boolean(false);
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        a.check(w, {});
        return Value::string(name == "upper"   ? python_upper(s)
                             : name == "lower" ? python_lower(s)
                             : name == "title" ? python_title(s)
                                               : python_capitalize(s));
    }
    if (name == "replace") {
        a.check(w, {"old", "new", "count"});
        return Value::string(python_replace(s, str_arg(a.get(0, "old"), w),
                                            str_arg(a.get(1, "new"), w),
                                            int_arg(a.get(2, "count"), -1, w)));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" ||
        name == "count") {
        a.check(w, {"sub", "start", "end"});
        const std::string& sub = str_arg(a.get(0, "sub"), w);
        // Searched in s[start:end]; found offsets count code points from s's start.
        const int64_t length = int64_t(code_points(s));
        const auto bound = [&](const Value* v) -> std::optional<int64_t> {
            if (!v || v->is_none()) return std::nullopt;
            return int_arg(v, 0, w);
        };
        const auto start = bound(a.get(1, "start")), end = bound(a.get(2, "end"));
        const auto clamp = [&](int64_t i) {
            return std::clamp<int64_t>(i < 0 ? i + length : i, 0, length);
        };
        const int64_t first = start ? clamp(*start) : 0, last = end ? clamp(*end) : length;
        if (start && *start > length) return Value::integer(name == "count" ? 0 : -1);
        const std::string part = python_slice(Value::string(s), start, end, 1).as_string();
        if (name == "count") {
            if (sub.empty())
                return Value::integer(last < first ? 0 : int64_t(code_points(part)) + 1);
            int64_t n = 0;
            for (size_t at = part.find(sub); at != std::string::npos;
                 at = part.find(sub, at + sub.size()))
                ++n;
            return Value::integer(n);
        }
        const size_t at = last < first                        ? std::string::npos
                          : name == "find" || name == "index" ? part.find(sub)
                                                              : part.rfind(sub);
        if (at == std::string::npos) {
            if (name == "index" || name == "rindex") fail("substring not found");
            return Value::integer(-1);
        }
        return Value::integer(first + int64_t(code_point_offset(part, at)));
    }
    if (name == "splitlines") {
        a.check(w, {"keepends"});
        const Value* keep = a.get(0, "keepends");
        return strings(python_splitlines(s, keep && keep->truthy()));
    }
    if (name == "join") {
        a.check(w, {"iterable"});
        const Value* items = a.get(0, "iterable");
        if (!items) fail("str.join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (const Value& item : iterate(*items)) {
            if (!item.is_string())
                fail("sequence item: expected str instance, " + item.type_name() + " found");
            check_length(uint64_t(out.size()) + s.size() + item.as_string().size());
            if (!first) out += s;
            out += item.as_string();
            first = false;
        }
        return Value::string(std::move(out));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        a.check(w, {"affix"});
        const std::string& x = str_arg(a.get(0, "affix"), w);
        if (name == "removeprefix") return Value::string(s.starts_with(x) ? s.substr(x.size()) : s);
        return Value::string(s.ends_with(x) ? s.substr(0, s.size() - x.size()) : s);
    }
    a.check(w, {});
    if (name == "isspace")
        return Value::boolean(all_chars(
            s, [](const std::string& c) { return python_strip(c, nullptr, true, true).empty(); }));
    if (name == "isdigit")
        return Value::boolean(
            all_chars(s, [](const std::string& c) { return c[0] >= '0' && c[0] <= '9'; }));
    if (name == "isalpha" || name == "isalnum")
        return Value::boolean(all_chars(s, [&](const std::string& c) {
            const bool alpha =
                python_upper(c) != python_lower(c) || static_cast<unsigned char>(c[0]) >= 0x80;
            return alpha || (name == "isalnum" && c[0] >= '0' && c[0] <= '9');
        }));
    if (name == "islower" || name == "isupper") {
        const bool lower = name == "islower";
        return Value::boolean(python_upper(s) != python_lower(s) &&
                              (lower ? python_lower(s) == s : python_upper(s) == s));
    }
    fail("not supported: method str." + name);
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) fail(obj.as_string());
    if (name.starts_with("_")) return unsafe(obj, name);
    if (obj.is_object()) return obj.as_object().attribute(name);
    if (obj.is_string() && (listed(name, kStrMethods) || listed(name, kOtherStrMethods)))
        return method(obj, name);
    if (obj.is_dict()) {
        if (listed(name, kDictMethods)) return method(obj, name);
        if (listed(name, kDictMutators)) return unsafe(obj, name);
        if (const Value* v = obj.entries().find(name)) return *v;
    }
    if (obj.is_sequence()) {
        if (listed(name, kListMethods)) return method(obj, name);
        if (listed(name, kListMutators)) return unsafe(obj, name);
    }
    return Value::undefined(str(obj.is_none() ? "'None'" : "'" + obj.type_name() + " object'",
                                " has no attribute ", quoted(name)));
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail(obj.as_string());
    if (obj.is_dict()) {
        if (const Value* v = obj.entries().find(key)) return *v;
    } else if ((obj.is_sequence() || obj.is_string()) && key.is_int()) {
        if (auto v = python_index(obj, key.as_int())) return *v;
    }
    if (key.is_string()) return get_attribute(obj, key.as_string());
    return Value::undefined(str(obj.type_name(), " object has no element ", quoted(key)));
}

Value get_path(const Value& obj, const std::string& path) {
    Value v = obj;
    size_t at = 0;
    for (;;) {
        const size_t dot = path.find('.', at);
        const std::string part =
            path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
        const bool digits =
            !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit) && part.size() < 18;
        v = get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
        if (dot == std::string::npos) return v;
        at = dot + 1;
    }
}

Value Method::call(Renderer&, Args& args) const {
    return call_method(self_, name_, args);
}

Value call_method(const Value& self, const std::string& name, Args& a) {
    if (self.is_string()) return string_method(self.as_string(), name, a);
    const std::string who = self.type_name() + "." + name + "()";
    if (name == "copy") {
        a.check(who.c_str(), {});
        return self;
    }
    if (self.is_dict()) {
        const Dict& d = self.entries();
        if (name == "get") {
            a.check(who.c_str(), {"key", "default"});
            const Value* key = a.get(0, "key");
            if (!key) fail("dict.get() takes at least 1 argument");
            const Value* found = d.find(*key);
            const Value* fallback = a.get(1, "default");
            return found ? *found : fallback ? *fallback : Value::none();
        }
        a.check(who.c_str(), {});
        std::vector<Value> out;
        for (const auto& [k, v] : d.entries)
            out.push_back(name == "keys" ? k : name == "values" ? v : Value::tuple({k, v}));
        return Value::list(std::move(out));
    }
    a.check(who.c_str(), {"value"});
    const Value* x = a.get(0, "value");
    if (!x) fail(who + " takes exactly one argument");
    int64_t n = 0;
    const auto& items = self.items();
    for (size_t i = 0; i < items.size(); ++i) {
        if (!(items[i] == *x)) continue;
        if (name == "index") return Value::integer(int64_t(i));
        ++n;
    }
    if (name == "index") fail(quoted(*x) + " is not in list");
    return Value::integer(n);
}

}  // namespace mt::text::jinja
