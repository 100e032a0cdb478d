// The Jinja tests (`x is defined`, `x is divisibleby 3`) with jinja2's definitions: a bool is a
// number but not an integer, an undefined is iterable, a dict is a sequence.
#include <cmath>
#include <map>

#include "jinja_object.h"

namespace mt::text::jinja {

namespace {

using Test = bool (*)(const Value& v, Args& a);

const Value& argument(Args& a, const char* test) {
    if (a.positional.size() != 1 || !a.keyword.empty())
        fail(str("test '", test, "' takes one argument"));
    return a.positional[0];
}

bool no_arguments(Args& a, const char* test) {
    a.check((std::string("test '") + test + "'").c_str(), {});
    return true;
}

bool parity(const Value& v, bool even) {
    if (v.is_int()) return (v.as_int() % 2 == 0) == even;
    if (v.kind() == Value::Kind::real) return (std::fmod(v.as_real(), 2.0) == 0) == even;
    fail("test 'even'/'odd' needs a number, not " + v.type_name());
}

bool less(const Value& a, const Value& b) {
    if (a.is_undefined()) fail(a.as_string());
    if (b.is_undefined()) fail(b.as_string());
    return python_less(a, b);
}

bool contained(const Value& v, const Value& container) {
    if (container.is_string()) {
        if (!v.is_string())
            fail("'in <string>' requires string as left operand, not " + v.type_name());
        return container.as_string().find(v.as_string()) != std::string::npos;
    }
    if (container.is_dict()) return container.entries().find(v) != nullptr;
    for (const Value& item : iterate(container))
        if (item == v) return true;
    return false;
}

bool is_case(const Value& v, bool lower) {
    const std::string s = v.str();
    return python_upper(s) != python_lower(s) && (lower ? python_lower(s) : python_upper(s)) == s;
}

const std::map<std::string, Test>& tests() {
    using K = Value::Kind;
    static const std::map<std::string, Test> table = {
        {"defined",
         [](const Value& v, Args& a) { return no_arguments(a, "defined") && !v.is_undefined(); }},
        {"undefined",
         [](const Value& v, Args& a) { return no_arguments(a, "undefined") && v.is_undefined(); }},
        {"none", [](const Value& v, Args& a) { return no_arguments(a, "none") && v.is_none(); }},
        {"boolean", [](const Value& v,
                       Args& a) { return no_arguments(a, "boolean") && v.kind() == K::boolean; }},
        {"true",
         [](const Value& v, Args& a) {
             return no_arguments(a, "true") && v.kind() == K::boolean && v.as_int();
         }},
        {"false",
         [](const Value& v, Args& a) {
             return no_arguments(a, "false") && v.kind() == K::boolean && !v.as_int();
         }},
        {"integer", [](const Value& v,
                       Args& a) { return no_arguments(a, "integer") && v.kind() == K::integer; }},
        {"float",
         [](const Value& v, Args& a) { return no_arguments(a, "float") && v.kind() == K::real; }},
        {"number",
         [](const Value& v, Args& a) { return no_arguments(a, "number") && v.is_number(); }},
        {"string",
         [](const Value& v, Args& a) { return no_arguments(a, "string") && v.is_string(); }},
        {"mapping",
         [](const Value& v, Args& a) { return no_arguments(a, "mapping") && v.is_dict(); }},
        {"iterable",
         [](const Value& v, Args& a) {
             return no_arguments(a, "iterable") &&
                    (v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict());
         }},
        {"sequence",
         [](const Value& v, Args& a) {
             return no_arguments(a, "sequence") &&
                    (v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict());
         }},
        {"callable",
         [](const Value& v, Args& a) {
             return no_arguments(a, "callable") && v.is_object() && v.as_object().callable();
         }},
        {"sameas", [](const Value& v, Args& a) { return v.same(argument(a, "sameas")); }},
        {"even",
         [](const Value& v, Args& a) { return no_arguments(a, "even") && parity(v, true); }},
        {"odd", [](const Value& v, Args& a) { return no_arguments(a, "odd") && parity(v, false); }},
        {"divisibleby",
         [](const Value& v, Args& a) {
             const Value& n = argument(a, "divisibleby");
             if (!v.is_number() || !n.is_number()) fail("test 'divisibleby' needs numbers");
             if (v.is_int() && n.is_int()) {
                 if (n.as_int() == 0) fail("integer division or modulo by zero");
                 return n.as_int() == -1 || v.as_int() % n.as_int() == 0;
             }
             if (n.as_real() == 0) fail("float modulo by zero");
             return std::fmod(v.as_real(), n.as_real()) == 0;
         }},
        {"eq", [](const Value& v, Args& a) { return v == argument(a, "eq"); }},
        {"equalto", [](const Value& v, Args& a) { return v == argument(a, "equalto"); }},
        {"==", [](const Value& v, Args& a) { return v == argument(a, "=="); }},
        {"ne", [](const Value& v, Args& a) { return !(v == argument(a, "ne")); }},
        {"!=", [](const Value& v, Args& a) { return !(v == argument(a, "!=")); }},
        {"lt", [](const Value& v, Args& a) { return less(v, argument(a, "lt")); }},
        {"lessthan", [](const Value& v, Args& a) { return less(v, argument(a, "lessthan")); }},
        {"<", [](const Value& v, Args& a) { return less(v, argument(a, "<")); }},
        {"le", [](const Value& v, Args& a) { return !less(argument(a, "le"), v); }},
        {"<=", [](const Value& v, Args& a) { return !less(argument(a, "<="), v); }},
        {"gt", [](const Value& v, Args& a) { return less(argument(a, "gt"), v); }},
        {"greaterthan",
         [](const Value& v, Args& a) { return less(argument(a, "greaterthan"), v); }},
        {">", [](const Value& v, Args& a) { return less(argument(a, ">"), v); }},
        {"ge", [](const Value& v, Args& a) { return !less(v, argument(a, "ge")); }},
        {">=", [](const Value& v, Args& a) { return !less(v, argument(a, ">=")); }},
        {"in", [](const Value& v, Args& a) { return contained(v, argument(a, "in")); }},
        {"lower",
         [](const Value& v, Args& a) { return no_arguments(a, "lower") && is_case(v, true); }},
        {"upper",
         [](const Value& v, Args& a) { return no_arguments(a, "upper") && is_case(v, false); }},
        {"escaped", [](const Value&, Args& a) { return !no_arguments(a, "escaped"); }},
        {"filter",
         [](const Value& v, Args& a) {
             return no_arguments(a, "filter") && v.is_string() && has_filter(v.as_string());
         }},
        {"test",
         [](const Value& v, Args& a) {
             return no_arguments(a, "test") && v.is_string() && has_test(v.as_string());
         }},
    };
    return table;
}

}  // namespace

bool has_test(const std::string& name) {
    return tests().count(name) != 0;
}

bool apply_test(const std::string& name, const Value& value, Args& args) {
    const auto it = tests().find(name);
    if (it == tests().end()) fail("not supported: test '" + name + "'");
    return it->second(value, args);
}

}  // namespace mt::text::jinja
