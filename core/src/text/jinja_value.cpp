// mt::text::jinja::Value: Python's values with its equality, truth and printing, and the
// budget that every value built during a render is charged to.
#include <algorithm>

#include "jinja_object.h"
#include "mt/error.h"
#include "mt/text/python_repr.h"
#include "mt/text/utf8.h"

namespace mt::text::jinja {

namespace {

thread_local Budget* current_budget = nullptr;

const std::vector<Value>& empty_items() {
    static const std::vector<Value> empty;
    return empty;
}

std::string repr_at(const Value& v, uint32_t depth);

std::string join_repr(const std::vector<Value>& items, uint32_t depth) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + repr_at(items[i], depth);
    return out;
}

std::string repr_at(const Value& v, uint32_t depth) {
    // Values nest at most kMaxDepth deep, but a namespace may hold itself.
    if (depth > 2 * kMaxDepth) fail("value nested too deep to print");
    switch (v.kind()) {
        case Value::Kind::string: {  // python_repr quotes a list of str: "['...']"
            const std::string r = python_repr({v.as_string()});
            return r.substr(1, r.size() - 2);
        }
        case Value::Kind::list:
            return "[" + join_repr(v.items(), depth + 1) + "]";
        case Value::Kind::tuple:
            return "(" + join_repr(v.items(), depth + 1) + (v.items().size() == 1 ? ",)" : ")");
        case Value::Kind::dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, item] : v.entries().entries) {
                out +=
                    (first ? "" : ", ") + repr_at(k, depth + 1) + ": " + repr_at(item, depth + 1);
                first = false;
            }
            return out + "}";
        }
        case Value::Kind::object: {
            if (auto* ns = dynamic_cast<const Namespace*>(&v.as_object()))
                return "<Namespace " + repr_at(ns->attributes(), depth + 1) + ">";
            return v.as_object().repr();
        }
        default:
            return v.str();
    }
}

bool equal_at(const Value& a, const Value& b, uint32_t depth);

bool equal_items(const std::vector<Value>& a, const std::vector<Value>& b, uint32_t depth) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!equal_at(a[i], b[i], depth + 1)) return false;
    return true;
}

bool equal_at(const Value& a, const Value& b, uint32_t depth) {
    using K = Value::Kind;
    if (a.is_number() && b.is_number()) {
        if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
        return a.as_real() == b.as_real();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case K::undefined:
        case K::none:
            return true;
        case K::string:
            return a.as_string() == b.as_string();
        case K::list:
        case K::tuple:
            return equal_items(a.items(), b.items(), depth);
        case K::dict: {
            const Dict &x = a.entries(), &y = b.entries();
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto& [k, item] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !equal_at(item, *other, depth + 1)) return false;
            }
            return true;
        }
        default:
            return a.same(b);
    }
}

}  // namespace

// ---- failures and arguments

void fail(std::string message) {
    throw TemplateFailure(message);
}

std::string quoted(std::string_view s) {
    const std::string_view cut = utf8_prefix(s, kMaxQuoted);
    return "'" + std::string(cut) + (cut.size() < s.size() ? "...'" : "'");
}

std::string quoted(const Value& v) {
    const std::string r = v.repr();
    const std::string_view cut = utf8_prefix(r, kMaxQuoted);
    return std::string(cut) + (cut.size() < r.size() ? "..." : "");
}

void Args::check(const char* who, std::initializer_list<const char*> names) const {
    if (positional.size() > names.size())
        fail(str(who, " takes at most ", names.size(), " argument(s), got ", positional.size()));
    for (const auto& given : keyword) {
        const std::string& name = given.first;
        const auto* at =
            std::find_if(names.begin(), names.end(), [&](const char* n) { return name == n; });
        if (at == names.end()) fail(str(who, " got an unexpected keyword argument ", quoted(name)));
        if (size_t(at - names.begin()) < positional.size())
            fail(str(who, " got multiple values for argument ", quoted(name)));
    }
}

const Value* Args::get(size_t index, const char* name) const {
    if (index < positional.size()) return &positional[index];
    for (const auto& [n, value] : keyword)
        if (n == name) return &value;
    return nullptr;
}

// ---- budget

Budget::Budget() : outer_(current_budget) {
    current_budget = this;
}

Budget::~Budget() {
    current_budget = outer_;
}

void Budget::charge(uint64_t bytes) {
    Budget* b = current_budget;
    if (!b) return;
    b->built_ += bytes;
    if (b->built_ > kMaxBuiltBytes)
        fail(str("the template built more than ", kMaxBuiltBytes >> 20,
                 " MiB of strings and lists (limit)"));
}

void Budget::step() {
    Budget* b = current_budget;
    if (b && ++b->steps_ > kMaxSteps)
        fail(str("the template ran more than ", kMaxSteps, " loop iterations and calls (limit)"));
}

void check_length(uint64_t bytes) {
    if (bytes > kMaxOutputBytes)
        fail(
            str("a string of ", bytes, " bytes is over the ", kMaxOutputBytes >> 20, " MiB limit"));
}

// ---- Dict and objects

const Value* Dict::find(const std::string& key) const {
    const auto it = string_keys.find(key);
    return it == string_keys.end() ? nullptr : &entries[it->second].second;
}

const Value* Dict::find(const Value& key) const {
    if (key.is_string()) return find(key.as_string());
    for (const auto& [k, v] : entries)
        if (!k.is_string() && k == key) return &v;
    return nullptr;
}

Value Object::attribute(const std::string& name) const {
    return Value::undefined(str("'", type_name(), " object' has no attribute ", quoted(name)));
}

Value Object::call(Renderer&, Args&) const {
    fail(str("'", type_name(), "' object is not callable"));
}

void Object::set_attribute(const std::string& name, Value) {
    fail(str("cannot assign attribute ", quoted(name), " on a ", type_name(),
             " object (only namespace() takes `set x.attr = ...`)"));
}

std::string Namespace::repr() const {
    return "<Namespace " + attributes_.repr() + ">";
}

Value Namespace::attribute(const std::string& name) const {
    if (const Value* v = attributes_.entries().find(name)) return *v;
    return Object::attribute(name);
}

void Namespace::set_attribute(const std::string& name, Value value) {
    if (name.starts_with("_"))
        fail("chat templates cannot store underscore-prefixed attributes on a namespace, but got " +
             quoted(name));
    attributes_.set(name, std::move(value));
}

// ---- Value

Value Value::none() {
    Value v;
    v.kind_ = Kind::none;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::boolean;
    v.int_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::integer;
    v.int_ = i;
    return v;
}

Value Value::real(double d) {
    Value v;
    v.kind_ = Kind::real;
    v.real_ = d;
    return v;
}

Value Value::string(std::string s) {
    check_length(s.size());
    Budget::charge(s.size());
    Value v;
    v.kind_ = Kind::string;
    v.string_ = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::undefined(std::string reason) {
    Value v;
    v.string_ = std::make_shared<const std::string>(std::move(reason));
    return v;
}

Value Value::list(std::vector<Value> items) {
    Budget::charge(sizeof(Value) * uint64_t(items.size()));
    uint32_t depth = 0;
    for (const Value& item : items) depth = std::max(depth, item.depth());
    if (depth + 1 > kMaxDepth) fail(mt::str("lists and dicts nested over ", kMaxDepth, " deep"));
    Value v;
    v.kind_ = Kind::list;
    v.int_ = depth + 1;
    v.list_ = std::make_shared<const std::vector<Value>>(std::move(items));
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.kind_ = Kind::tuple;
    return v;
}

Value Value::dict() {
    Value v;
    v.kind_ = Kind::dict;
    v.dict_ = std::make_shared<Dict>();
    return v;
}

Value Value::object(std::shared_ptr<Object> object) {
    Value v;
    v.kind_ = Kind::object;
    v.object_ = std::move(object);
    return v;
}

Value& Value::set(const Value& key, Value value) {
    MT_CHECK(kind_ == Kind::dict, "Value::set on a ", type_name(), ", not a dict");
    Budget::charge(32);
    Dict& d = *dict_;
    const uint32_t depth = std::max(key.depth(), value.depth()) + 1;
    if (depth > kMaxDepth) fail(mt::str("lists and dicts nested over ", kMaxDepth, " deep"));
    d.depth = std::max(d.depth, depth);
    if (const Value* found = d.find(key)) {
        *const_cast<Value*>(found) = std::move(value);
        return *this;
    }
    if (key.is_string()) d.string_keys.emplace(key.as_string(), d.entries.size());
    d.entries.emplace_back(key, std::move(value));
    return *this;
}

const std::string& Value::as_string() const {
    static const std::string empty;
    return string_ ? *string_ : empty;
}

const std::vector<Value>& Value::items() const {
    return list_ ? *list_ : empty_items();
}

const Dict& Value::entries() const {
    static const Dict empty;
    return dict_ ? *dict_ : empty;
}

Value Value::get(const std::string& key) const {
    const Value* v = kind_ == Kind::dict ? dict_->find(key) : nullptr;
    return v ? *v : Value::undefined("'" + key + "' is undefined");
}

uint32_t Value::depth() const {
    if (kind_ == Kind::list || kind_ == Kind::tuple) return uint32_t(int_);
    if (kind_ == Kind::dict) return dict_->depth;
    return 0;
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::undefined:
        case Kind::none:
            return false;
        case Kind::boolean:
        case Kind::integer:
            return int_ != 0;
        case Kind::real:
            return real_ != 0;
        case Kind::string:
            return !string_->empty();
        case Kind::list:
        case Kind::tuple:
            return !list_->empty();
        case Kind::dict:
            return !dict_->entries.empty();
        case Kind::object:
            return true;
    }
    return false;
}

bool Value::operator==(const Value& other) const {
    return equal_at(*this, other, 0);
}

bool Value::same(const Value& other) const {
    if (kind_ != other.kind_) return false;
    switch (kind_) {
        case Kind::undefined:
        case Kind::none:
            return true;
        case Kind::boolean:
        case Kind::integer:
            return int_ == other.int_;
        case Kind::real:
            return real_ == other.real_;
        case Kind::string:
            return string_ == other.string_;
        case Kind::list:
        case Kind::tuple:
            return list_ == other.list_;
        case Kind::dict:
            return dict_ == other.dict_;
        case Kind::object:
            return object_ == other.object_;
    }
    return false;
}

std::string Value::str() const {
    switch (kind_) {
        case Kind::undefined:
            return "";
        case Kind::none:
            return "None";
        case Kind::boolean:
            return int_ ? "True" : "False";
        case Kind::integer:
            return std::to_string(int_);
        case Kind::real:
            return repr_float(real_);
        case Kind::string:
            return *string_;
        default:
            return repr_at(*this, 0);
    }
}

std::string Value::repr() const {
    return repr_at(*this, 0);
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "NoneType";
        case Kind::boolean:
            return "bool";
        case Kind::integer:
            return "int";
        case Kind::real:
            return "float";
        case Kind::string:
            return "str";
        case Kind::list:
            return "list";
        case Kind::tuple:
            return "tuple";
        case Kind::dict:
            return "dict";
        case Kind::object:
            return object_->type_name();
    }
    return "?";
}

}  // namespace mt::text::jinja
