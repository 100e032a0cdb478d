// The engine's private side of mt::text::jinja::Value: dict storage, the objects that are not
// data (namespaces, loop, callables), call arguments, the bounds a hostile template meets, and
// how a failure travels up to the line that caused it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mt/error.h"
#include "mt/text/jinja.h"

namespace mt::text::jinja {

// What a downloaded template may make the server do.
inline constexpr size_t kMaxOutputBytes = size_t(64) << 20;    // rendered text and any one string
inline constexpr uint64_t kMaxBuiltBytes = uint64_t(1) << 30;  // all strings and lists built
inline constexpr uint64_t kMaxSteps = 2'000'000;               // loop iterations and calls
inline constexpr int64_t kMaxRange = 100'000;  // range() items, as jinja2's sandbox allows
inline constexpr uint32_t kMaxDepth = 256;     // nesting of syntax and of values
inline constexpr int kMaxCallDepth = 50;       // macros calling macros
inline constexpr int kMaxEvalDepth = 1500;     // the renderer's own recursion
inline constexpr size_t kMaxQuoted = 200;      // bytes of a value quoted in a message

struct Dict {
    std::vector<std::pair<Value, Value>> entries;
    std::unordered_map<std::string, size_t> string_keys;
    uint32_t depth = 1;

    const Value* find(const Value& key) const;
    const Value* find(const std::string& key) const;
};

// A failure of the template (not of the caller): Template::render adds the line it happened on.
struct TemplateFailure : Error {
    using Error::Error;
};
[[noreturn]] void fail(std::string message);
// A value quoted in a message, cut to kMaxQuoted bytes.
std::string quoted(const Value& v);
std::string quoted(std::string_view s);

struct Args {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    // The argument at `index` or named `name`, or nullopt; keyword names not in `names` and
    // positionals past names.size() are refused naming `who`.
    void check(const char* who, std::initializer_list<const char*> names) const;
    const Value* get(size_t index, const char* name) const;
};

// The bounds of the render running on this thread (none outside a render): Value's builders
// charge what they build, loops and calls count steps.
class Budget {
  public:
    Budget();
    ~Budget();
    Budget(const Budget&) = delete;
    Budget& operator=(const Budget&) = delete;
    static void charge(uint64_t bytes);
    static void step();

  private:
    Budget* outer_;
    uint64_t built_ = 0, steps_ = 0;
};
// Refuses a string of `bytes` before it is built.
void check_length(uint64_t bytes);

class Renderer;

class Object {
  public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;
    virtual std::string repr() const { return "<" + type_name() + " object>"; }
    virtual Value attribute(const std::string& name) const;
    virtual bool callable() const { return false; }
    virtual Value call(Renderer& renderer, Args& args) const;
    // namespace() objects take `set ns.attr = value`; the others refuse.
    virtual void set_attribute(const std::string& name, Value value);
};

// namespace(...): the one mutable value, so loops can carry state out of their scope.
class Namespace : public Object {
  public:
    std::string type_name() const override { return "Namespace"; }
    std::string repr() const override;
    Value attribute(const std::string& name) const override;
    void set_attribute(const std::string& name, Value value) override;
    // Drops the attributes: a namespace stored in itself would otherwise never be freed.
    void clear() { attributes_ = Value::dict(); }
    const Value& attributes() const { return attributes_; }

  private:
    Value attributes_ = Value::dict();
};

// What callables need from the render that calls them (jinja_render.cpp implements it).
class Renderer {
  public:
    virtual ~Renderer() = default;
    // The time strftime_now() reads.
    virtual std::tm now() const = 0;
    // Keeps a namespace() until the render ends, when its attributes are dropped.
    virtual void adopt(const std::shared_ptr<Namespace>& ns) = 0;
};

// A bound method of a str, dict or list ("a,b".split), called through the sandbox's allow-list.
class Method : public Object {
  public:
    Method(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    bool callable() const override { return true; }
    Value call(Renderer& renderer, Args& args) const override;

  private:
    Value self_;
    std::string name_;
};

// range, namespace, dict, raise_exception and strftime_now (jinja_globals.cpp), or nullopt.
std::optional<Value> global(const std::string& name);

// A builtin function.
class Builtin : public Object {
  public:
    using Function = Value (*)(Renderer& renderer, Args& args);
    Builtin(std::string name, Function f) : name_(std::move(name)), f_(f) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    std::string repr() const override { return "<built-in function " + name_ + ">"; }
    bool callable() const override { return true; }
    Value call(Renderer& renderer, Args& args) const override { return f_(renderer, args); }

  private:
    std::string name_;
    Function f_;
};

// obj.name and obj[key] as jinja2's sandbox reads them (jinja_members.cpp): an attribute is an
// allowed method first, then a dict's key; an item is the key or index, then for a str key the
// attribute; what is missing is undefined (with the reason), and so is a method that mutates.
Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// The filters' attribute="a.b.0" paths.
Value get_path(const Value& obj, const std::string& path);
Value call_method(const Value& self, const std::string& name, Args& args);

// Python helpers over UTF-8 text (jinja_python_str.cpp): code points, not bytes.
size_t code_points(std::string_view s);
std::string repr_float(double d);
bool is_python_space(uint32_t cp);
std::string python_strip(std::string_view s, const Value* chars, bool left, bool right);
std::string python_upper(std::string_view s);
std::string python_lower(std::string_view s);
std::string python_capitalize(std::string_view s);
std::string python_title(std::string_view s);
std::vector<std::string> python_splitlines(std::string_view s, bool keepends);
std::vector<std::string> python_split(std::string_view s, const Value* sep, int64_t maxsplit,
                                      bool from_right);
std::string python_replace(std::string_view s, std::string_view old, std::string_view with,
                           int64_t count);
// The code point offset of byte offset `byte` (for find/index).
size_t code_point_offset(std::string_view s, size_t byte);
// value[start:stop:step] of a str or list with Python's clamping; step != 0.
Value python_slice(const Value& value, std::optional<int64_t> start, std::optional<int64_t> stop,
                   int64_t step);
// value[index] of a str (one code point) or list; nullopt when out of range.
std::optional<Value> python_index(const Value& value, int64_t index);
// Python's < of two values (numbers, strings, sequences); refuses other pairs.
bool python_less(const Value& a, const Value& b);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) (jinja_json.cpp).
struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};
std::string to_json(const Value& value, const JsonOptions& options);

// Filters and tests by name (jinja_filters.cpp, jinja_tests.cpp); unknown names are refused.
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& value, Args& args);
bool apply_test(const std::string& name, const Value& value, Args& args);
// A value's items as a for-loop sees them: a str's characters, a dict's keys, nothing for an
// undefined; refuses what Python cannot iterate.
std::vector<Value> iterate(const Value& value);

}  // namespace mt::text::jinja
