// The Jinja filters chat templates use, with jinja2's arguments and defaults (sort and unique
// ignore case unless told, join and map take attribute=), and transformers' tojson.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>

#include "jinja_object.h"
#include "mt/text/utf8.h"

namespace mt::text::jinja {

namespace {

using Filter = Value (*)(const Value& v, Args& a);

bool flag(const Value* v) {
    return v && v->truthy();
}

std::string text(const Value& v) {
    return v.str();
}

// The sort key of sort, unique, min, max and dictsort: the attribute, lowered unless case matters.
Value sort_key(const Value& v, const Value* attribute, bool case_sensitive) {
    Value k = attribute && !attribute->is_none() ? get_path(v, attribute->str()) : v;
    if (!case_sensitive && k.is_string()) return Value::string(python_lower(k.as_string()));
    return k;
}

Value abs_(const Value& v, Args& a) {
    a.check("filter 'abs'", {});
    if (v.kind() == Value::Kind::real) return Value::real(std::fabs(v.as_real()));
    if (!v.is_int()) fail("bad operand type for abs(): '" + v.type_name() + "'");
    if (v.as_int() == INT64_MIN) fail("not supported: integer over 64 bits");
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
}

Value capitalize(const Value& v, Args& a) {
    a.check("filter 'capitalize'", {});
    return Value::string(python_capitalize(text(v)));
}

Value length(const Value& v, Args& a) {
    a.check("filter 'length'", {});
    switch (v.kind()) {
        case Value::Kind::undefined:
            return Value::integer(0);
        case Value::Kind::string:
            return Value::integer(int64_t(code_points(v.as_string())));
        case Value::Kind::list:
        case Value::Kind::tuple:
            return Value::integer(int64_t(v.items().size()));
        case Value::Kind::dict:
            return Value::integer(int64_t(v.entries().entries.size()));
        default:
            fail("object of type '" + v.type_name() + "' has no len()");
    }
}

Value default_(const Value& v, Args& a) {
    a.check("filter 'default'", {"default_value", "boolean"});
    const Value* fallback = a.get(0, "default_value");
    const bool use = v.is_undefined() || (flag(a.get(1, "boolean")) && !v.truthy());
    if (!use) return v;
    return fallback ? *fallback : Value::string("");
}

Value dictsort(const Value& v, Args& a) {
    a.check("filter 'dictsort'", {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) fail("dictsort expects a dict, not " + v.type_name());
    const Value* by = a.get(1, "by");
    const bool by_value = by && by->str() == "value";
    if (by && !by_value && by->str() != "key") fail("You can only sort by either 'key' or 'value'");
    const bool case_sensitive = flag(a.get(0, "case_sensitive"));
    std::vector<Value> pairs;
    for (const auto& [k, item] : v.entries().entries) pairs.push_back(Value::tuple({k, item}));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
        const size_t i = by_value ? 1 : 0;
        return python_less(sort_key(x.items()[i], nullptr, case_sensitive),
                           sort_key(y.items()[i], nullptr, case_sensitive));
    });
    if (flag(a.get(2, "reverse"))) std::reverse(pairs.begin(), pairs.end());
    return Value::list(std::move(pairs));
}

Value first(const Value& v, Args& a) {
    a.check("filter 'first'", {});
    if (v.is_sequence()) {
        if (!v.items().empty()) return v.items().front();
    } else if (auto c = v.is_string() ? python_index(v, 0) : std::nullopt) {
        return *c;
    } else if (!v.is_string()) {
        const std::vector<Value> items = iterate(v);
        if (!items.empty()) return items.front();
    }
    return Value::undefined("No first item, sequence was empty.");
}

Value last(const Value& v, Args& a) {
    a.check("filter 'last'", {});
    if (v.is_string()) {
        if (auto c = python_index(v, -1)) return *c;
    } else {
        const std::vector<Value> items = iterate(v);
        if (!items.empty()) return items.back();
    }
    return Value::undefined("No last item, sequence was empty.");
}

// Python's float(str): optional whitespace, sign, digits with single "_" between them.
std::optional<double> parse_float(const std::string& s) {
    std::string t = python_strip(s, nullptr, true, true);
    if (t.find("__") != std::string::npos || t.starts_with("_") || t.ends_with("_"))
        return std::nullopt;
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    if (t.empty() || t.find_first_of("xXpP") != std::string::npos) return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) return std::nullopt;
    return d;
}

Value float_(const Value& v, Args& a) {
    a.check("filter 'float'", {"default"});
    const Value* fallback = a.get(0, "default");
    if (v.is_number()) return Value::real(v.as_real());
    if (v.is_string())
        if (auto d = parse_float(v.as_string())) return Value::real(*d);
    return fallback ? *fallback : Value::real(0.0);
}

Value int_(const Value& v, Args& a) {
    a.check("filter 'int'", {"default", "base"});
    const Value* fallback = a.get(0, "default");
    const Value* base_arg = a.get(1, "base");
    const int base = base_arg && base_arg->is_int() ? int(base_arg->as_int()) : 10;
    if (v.is_int()) return Value::integer(v.as_int());
    if (v.kind() == Value::Kind::real && std::isfinite(v.as_real()) &&
        std::fabs(v.as_real()) < 9.2e18)
        return Value::integer(int64_t(v.as_real()));
    if (v.is_string()) {
        std::string t = python_strip(v.as_string(), nullptr, true, true);
        t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
        if (!t.empty() && base >= 2 && base <= 36) {
            errno = 0;
            char* end = nullptr;
            const long long i = std::strtoll(t.c_str(), &end, base);
            if (end == t.c_str() + t.size() && errno == 0 &&
                !std::isspace(static_cast<unsigned char>(t[0])))
                return Value::integer(i);
        }
        if (auto d = parse_float(v.as_string()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
            return Value::integer(int64_t(*d));
    }
    return fallback ? *fallback : Value::integer(0);
}

Value items(const Value& v, Args& a) {
    a.check("filter 'items'", {});
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> pairs;
    for (const auto& [k, item] : v.entries().entries) pairs.push_back(Value::tuple({k, item}));
    return Value::list(std::move(pairs));
}

Value join(const Value& v, Args& a) {
    a.check("filter 'join'", {"d", "attribute"});
    const Value* sep = a.get(0, "d");
    const Value* attribute = a.get(1, "attribute");
    const std::string d = sep ? sep->str() : "";
    std::string out;
    bool first_item = true;
    for (const Value& item : iterate(v)) {
        const std::string s =
            text(attribute && !attribute->is_none() ? get_path(item, attribute->str()) : item);
        check_length(uint64_t(out.size()) + d.size() + s.size());
        if (!first_item) out += d;
        out += s;
        first_item = false;
    }
    return Value::string(std::move(out));
}

Value list(const Value& v, Args& a) {
    a.check("filter 'list'", {});
    return Value::list(iterate(v));
}

Value lower(const Value& v, Args& a) {
    a.check("filter 'lower'", {});
    return Value::string(python_lower(text(v)));
}

Value upper(const Value& v, Args& a) {
    a.check("filter 'upper'", {});
    return Value::string(python_upper(text(v)));
}

// jinja2's title: each run after -, whitespace or an opening bracket starts upper-case.
Value title(const Value& v, Args& a) {
    a.check("filter 'title'", {});
    const std::string s = text(v);
    std::string out;
    size_t word = 0;
    const auto separator = [&](size_t i) {
        const char c = s[i];
        return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
               python_strip(s.substr(i, 1), nullptr, true, true).empty();
    };
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i < s.size() && !separator(i)) continue;
        if (i > word) {
            const Value w = Value::string(s.substr(word, i - word));
            const Value head = *python_index(w, 0);
            out += python_upper(head.as_string()) +
                   python_lower(w.as_string().substr(head.as_string().size()));
        }
        if (i < s.size()) out += s[i];
        word = i + 1;
    }
    return Value::string(std::move(out));
}

Value trim(const Value& v, Args& a) {
    a.check("filter 'trim'", {"chars"});
    return Value::string(python_strip(text(v), a.get(0, "chars"), true, true));
}

Value replace(const Value& v, Args& a) {
    a.check("filter 'replace'", {"old", "new", "count"});
    const Value* old = a.get(0, "old");
    const Value* with = a.get(1, "new");
    const Value* count = a.get(2, "count");
    if (!old || !with) fail("filter 'replace' takes old and new strings");
    return Value::string(python_replace(text(v), text(*old), text(*with),
                                        count && count->is_int() ? count->as_int() : -1));
}

// map(attribute='a', default=x) or map('filter', args...).
Value map(const Value& v, Args& a) {
    std::vector<Value> out;
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [name, value] : a.keyword) {
        if (name == "attribute")
            attribute = &value;
        else if (name == "default")
            fallback = &value;
    }
    if (attribute) {
        for (const Value& item : iterate(v)) {
            Value x = get_path(item, attribute->str());
            out.push_back(x.is_undefined() && fallback ? *fallback : x);
        }
        return Value::list(std::move(out));
    }
    if (a.positional.empty() || !a.positional[0].is_string())
        fail("map requires a filter argument");
    const std::string name = a.positional[0].as_string();
    if (!has_filter(name)) fail("not supported: filter '" + name + "'");
    Args rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.keyword = a.keyword;
    for (const Value& item : iterate(v)) {
        Args copy = rest;
        out.push_back(apply_filter(name, item, copy));
    }
    return Value::list(std::move(out));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select(const Value& v, Args& a, bool by_attribute, bool keep) {
    const size_t skip = by_attribute ? 1 : 0;
    if (by_attribute && (a.positional.empty() || !a.positional[0].is_string()))
        fail("selectattr and rejectattr need an attribute name");
    const bool has_test_name = a.positional.size() > skip;
    std::string test;
    if (has_test_name) {
        if (!a.positional[skip].is_string()) fail("the test's name must be a string");
        test = a.positional[skip].as_string();
        if (!has_test(test)) fail("not supported: test '" + test + "'");
    }
    Args rest;
    if (has_test_name)
        rest.positional.assign(a.positional.begin() + long(skip) + 1, a.positional.end());
    rest.keyword = a.keyword;
    std::vector<Value> out;
    for (const Value& item : iterate(v)) {
        Budget::step();
        const Value subject = by_attribute ? get_path(item, a.positional[0].as_string()) : item;
        Args copy = rest;
        const bool passed = has_test_name ? apply_test(test, subject, copy) : subject.truthy();
        if (passed == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value reverse(const Value& v, Args& a) {
    a.check("filter 'reverse'", {});
    if (v.is_string()) return python_slice(v, std::nullopt, std::nullopt, -1);
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

// Python's round(x, n): ties to even on the exact binary value, as printf rounds.
Value round(const Value& v, Args& a) {
    a.check("filter 'round'", {"precision", "method"});
    const Value* p = a.get(0, "precision");
    const Value* m = a.get(1, "method");
    const int64_t precision = p && p->is_int() ? p->as_int() : 0;
    const std::string method = m ? m->str() : "common";
    if (!v.is_number()) fail("filter 'round' needs a number, not " + v.type_name());
    if (method != "common" && method != "ceil" && method != "floor")
        fail("method must be common, ceil or floor");
    if (method == "common" && v.is_int()) return Value::integer(v.as_int());
    const double x = v.as_real();
    if (method != "common") {
        const double scale = std::pow(10.0, double(precision));
        return Value::real((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) /
                           scale);
    }
    if (!std::isfinite(x) || precision > 300) return Value::real(x);
    if (precision < 0) {
        const double scale = std::pow(10.0, double(-precision));
        return Value::real(std::nearbyint(x / scale) * scale);
    }
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", int(precision), x);
    return Value::real(std::strtod(buf, nullptr));
}

Value safe(const Value& v, Args& a) {
    a.check("filter 'safe'", {});
    return Value::string(text(v));
}

Value sort(const Value& v, Args& a) {
    a.check("filter 'sort'", {"reverse", "case_sensitive", "attribute"});
    const bool case_sensitive = flag(a.get(1, "case_sensitive"));
    const Value* attribute = a.get(2, "attribute");
    std::vector<Value> items = iterate(v);
    std::vector<std::pair<Value, size_t>> keyed;
    for (size_t i = 0; i < items.size(); ++i)
        keyed.emplace_back(sort_key(items[i], attribute, case_sensitive), i);
    const bool reversed = flag(a.get(0, "reverse"));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reversed ? python_less(y.first, x.first) : python_less(x.first, y.first);
    });
    std::vector<Value> out;
    for (const auto& [k, i] : keyed) out.push_back(items[i]);
    return Value::list(std::move(out));
}

Value string(const Value& v, Args& a) {
    a.check("filter 'string'", {});
    return v.is_string() ? v : Value::string(text(v));
}

Value sum(const Value& v, Args& a) {
    a.check("filter 'sum'", {"attribute", "start"});
    const Value* attribute = a.get(0, "attribute");
    const Value* start = a.get(1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const Value& item : iterate(v)) {
        const Value x =
            attribute && !attribute->is_none() ? get_path(item, attribute->str()) : item;
        if (!x.is_number() || !total.is_number())
            fail("unsupported operand type(s) for +: '" + total.type_name() + "' and '" +
                 x.type_name() + "'");
        int64_t r = 0;
        if (x.is_int() && total.is_int() && !__builtin_add_overflow(total.as_int(), x.as_int(), &r))
            total = Value::integer(r);
        else if (x.is_int() && total.is_int())
            fail("not supported: integer over 64 bits");
        else
            total = Value::real(total.as_real() + x.as_real());
    }
    return total;
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False).
Value tojson(const Value& v, Args& a) {
    a.check("filter 'tojson'", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions o;
    o.ensure_ascii = flag(a.get(0, "ensure_ascii"));
    if (const Value* indent = a.get(1, "indent"); indent && !indent->is_none()) {
        if (indent->is_string())
            o.indent = indent->as_string();
        else if (indent->is_int())
            o.indent = std::string(size_t(std::clamp<int64_t>(indent->as_int(), 0, 1024)), ' ');
        else
            fail("tojson indent must be an int or a str");
        o.item_separator = ",";
    }
    if (const Value* separators = a.get(2, "separators"); separators && !separators->is_none()) {
        const std::vector<Value> parts = iterate(*separators);
        if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
            fail("tojson separators must be an (item_separator, key_separator) pair of strings");
        o.item_separator = parts[0].as_string();
        o.key_separator = parts[1].as_string();
    }
    o.sort_keys = flag(a.get(3, "sort_keys"));
    return Value::string(to_json(v, o));
}

Value unique(const Value& v, Args& a) {
    a.check("filter 'unique'", {"case_sensitive", "attribute"});
    const bool case_sensitive = flag(a.get(0, "case_sensitive"));
    const Value* attribute = a.get(1, "attribute");
    std::vector<Value> seen, out;
    for (const Value& item : iterate(v)) {
        Budget::step();
        const Value key = sort_key(item, attribute, case_sensitive);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value min_max(const Value& v, Args& a, bool max) {
    a.check(max ? "filter 'max'" : "filter 'min'", {"case_sensitive", "attribute"});
    const bool case_sensitive = flag(a.get(0, "case_sensitive"));
    const Value* attribute = a.get(1, "attribute");
    std::optional<Value> best, best_key;
    for (const Value& item : iterate(v)) {
        const Value key = sort_key(item, attribute, case_sensitive);
        if (!best || (max ? python_less(*best_key, key) : python_less(key, *best_key)))
            best = item, best_key = key;
    }
    return best ? *best
                : Value::undefined(max ? "No largest item, sequence was empty."
                                       : "No smallest item, sequence was empty.");
}

// jinja2's indent: lines after the first (and the first with first=True) get the prefix, blank
// lines only with blank=True.
Value indent(const Value& v, Args& a) {
    a.check("filter 'indent'", {"width", "first", "blank"});
    const Value* width = a.get(0, "width");
    std::string prefix =
        width && width->is_string()
            ? width->as_string()
            : std::string(size_t(std::clamp<int64_t>(width ? width->as_int() : 4, 0, 1024)), ' ');
    const bool blank = flag(a.get(2, "blank"));
    const std::vector<std::string> lines = python_splitlines(text(v) + "\n", false);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        check_length(uint64_t(out.size()) + prefix.size() + lines[i].size() + 1);
        if (i) out += "\n";
        if (i && (blank || !lines[i].empty())) out += prefix;
        out += lines[i];
    }
    if (flag(a.get(1, "first"))) out = prefix + out;
    return Value::string(std::move(out));
}

Value escape(const Value& v, Args& a) {
    a.check("filter 'escape'", {});
    std::string out;
    for (char c : text(v)) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return Value::string(std::move(out));
}

const std::map<std::string, Filter>& filters() {
    static const std::map<std::string, Filter> table = {
        {"abs", abs_},
        {"capitalize", capitalize},
        {"count", length},
        {"d", default_},
        {"default", default_},
        {"dictsort", dictsort},
        {"e", escape},
        {"escape", escape},
        {"first", first},
        {"float", float_},
        {"indent", indent},
        {"int", int_},
        {"items", items},
        {"join", join},
        {"last", last},
        {"length", length},
        {"list", list},
        {"lower", lower},
        {"map", map},
        {"max", [](const Value& v, Args& a) { return min_max(v, a, true); }},
        {"min", [](const Value& v, Args& a) { return min_max(v, a, false); }},
        {"reject", [](const Value& v, Args& a) { return select(v, a, false, false); }},
        {"rejectattr", [](const Value& v, Args& a) { return select(v, a, true, false); }},
        {"replace", replace},
        {"reverse", reverse},
        {"round", round},
        {"safe", safe},
        {"select", [](const Value& v, Args& a) { return select(v, a, false, true); }},
        {"selectattr", [](const Value& v, Args& a) { return select(v, a, true, true); }},
        {"sort", sort},
        {"string", string},
        {"sum", sum},
        {"title", title},
        {"tojson", tojson},
        {"trim", trim},
        {"unique", unique},
        {"upper", upper},
    };
    return table;
}

}  // namespace

bool has_filter(const std::string& name) {
    return filters().count(name) != 0;
}

Value apply_filter(const std::string& name, const Value& value, Args& args) {
    const auto it = filters().find(name);
    if (it == filters().end()) fail("not supported: filter '" + name + "'");
    return it->second(value, args);
}

std::vector<Value> iterate(const Value& value) {
    switch (value.kind()) {
        case Value::Kind::undefined:
            return {};
        case Value::Kind::string: {
            const std::string& s = value.as_string();
            Budget::charge(sizeof(Value) * uint64_t(s.size()));
            std::vector<Value> chars;
            const auto* p = reinterpret_cast<const uint8_t*>(s.data());
            const auto* end = p + s.size();
            while (p < end) {
                uint32_t cp = 0;
                const size_t len = std::max<size_t>(decode_utf8(p, end, cp), 1);
                chars.push_back(Value::string(std::string(reinterpret_cast<const char*>(p), len)));
                p += len;
            }
            return chars;
        }
        case Value::Kind::list:
        case Value::Kind::tuple:
            Budget::charge(sizeof(Value) * uint64_t(value.items().size()));
            return value.items();
        case Value::Kind::dict: {
            Budget::charge(sizeof(Value) * uint64_t(value.entries().entries.size()));
            std::vector<Value> keys;
            for (const auto& [k, v] : value.entries().entries) keys.push_back(k);
            return keys;
        }
        default:
            fail("'" + value.type_name() + "' object is not iterable");
    }
}

}  // namespace mt::text::jinja
