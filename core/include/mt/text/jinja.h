// A Jinja2 engine for Hugging Face chat templates (tokenizer_config.json's chat_template): renders
// messages exactly as transformers' apply_chat_template does, or refuses naming the construct.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/api.h"

namespace mt::text::jinja {

class Object;  // namespaces, the loop variable, macros, builtins and bound methods (jinja_object.h)
struct Dict;   // insertion-ordered entries with an index of the string keys (jinja_object.h)
struct Node;   // the parsed template (jinja_ast.h)

// A Python value as Jinja2 sees it. Strings, lists and dicts are immutable once built (the
// sandbox forbids mutation), so copies share them; only a namespace() changes in place.
class MT_API Value {
  public:
    enum class Kind : uint8_t {
        undefined,
        none,
        boolean,
        integer,
        real,
        string,
        list,
        tuple,
        dict,
        object
    };

    Value() = default;  // undefined
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value real(double d);
    static Value string(std::string s);
    static Value list(std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    static Value dict();
    static Value object(std::shared_ptr<Object> object);
    // Undefined that remembers why, for the message when it is used: "'x' is undefined".
    static Value undefined(std::string reason);
    // JSON text as Python's json.loads reads it: integral numbers as int, object order kept.
    static Value from_json(std::string_view json);

    // Adds or replaces an entry of a dict (keeping the first insertion's place), as d[k] = v.
    Value& set(const Value& key, Value value);
    Value& set(std::string key, Value value) {
        return set(string(std::move(key)), std::move(value));
    }

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::undefined; }
    bool is_none() const { return kind_ == Kind::none; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_sequence() const { return kind_ == Kind::list || kind_ == Kind::tuple; }
    bool is_dict() const { return kind_ == Kind::dict; }
    bool is_object() const { return kind_ == Kind::object; }
    // int or bool (Python's bool is an int), and int, bool or float.
    bool is_int() const { return kind_ == Kind::integer || kind_ == Kind::boolean; }
    bool is_number() const { return is_int() || kind_ == Kind::real; }

    int64_t as_int() const { return int_; }
    double as_real() const { return kind_ == Kind::real ? real_ : double(int_); }
    const std::string& as_string() const;  // the string, or an undefined's reason
    const std::vector<Value>& items() const;
    const Dict& entries() const;
    // A dict's value for a str key, or undefined.
    Value get(const std::string& key) const;
    Object& as_object() const { return *object_; }
    // Nesting depth of lists and dicts (a scalar is 0): bounded so nothing recurses too deep.
    uint32_t depth() const;

    bool truthy() const;
    // Python's ==, and identity of the shared payload (for `is sameas`).
    bool operator==(const Value& other) const;
    bool same(const Value& other) const;
    // str(value) and repr(value) as Python prints them; an undefined prints as "".
    std::string str() const;
    std::string repr() const;
    // Python's type name for messages: "str", "dict", "NoneType".
    std::string type_name() const;

  private:
    Kind kind_ = Kind::undefined;
    int64_t int_ = 0;
    double real_ = 0;
    std::shared_ptr<const std::string> string_;
    std::shared_ptr<const std::vector<Value>> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Object> object_;
};

// A parsed chat template; render() may run on several threads at once.
class MT_API Template {
  public:
    // Parses `source`; throws mt::Error "chat template line N: ..." for what it cannot read.
    explicit Template(std::string_view source);
    ~Template();
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;

    // Renders with `context` (a dict) as the variables; strftime_now() reads the local time.
    std::string render(const Value& context) const;
    // The same with strftime_now() reading `now` (reproducible output for tests).
    std::string render(const Value& context, const std::tm& now) const;

  private:
    std::unique_ptr<Node> root_;
};

}  // namespace mt::text::jinja
