// The Jinja renderer: walks the parsed template with jinja2's scoping (a for loop's body and a
// macro get a scope of their own, `if` does not), Python's operators and jinja2's undefined
// values, inside the bounds of jinja_object.h.
#include <algorithm>
#include <cmath>
#include <exception>
#include <unordered_map>

#include "jinja_ast.h"

namespace mt::text::jinja {

namespace {

using Kind = Node::Kind;

struct Scope {
    explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
    std::shared_ptr<Scope> parent;
    std::unordered_map<std::string, Value> vars;

    const Value* find(const std::string& name) const {
        for (const Scope* s = this; s; s = s->parent.get()) {
            const auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};
using ScopePtr = std::shared_ptr<Scope>;

class RenderState;

// A {% macro %}: its body runs in a scope below the one that defined it.
class Macro : public Object {
  public:
    Macro(const Node& node, const ScopePtr& scope) : node_(node), scope_(scope) {}
    std::string type_name() const override { return "Macro"; }
    std::string repr() const override { return "<Macro '" + node_.name + "'>"; }
    bool callable() const override { return true; }
    Value call(Renderer& renderer, Args& args) const override;

  private:
    const Node& node_;
    std::weak_ptr<Scope> scope_;  // weak: the scope holds the macro
};

// The `loop` variable of a for loop.
class Loop : public Object {
  public:
    explicit Loop(std::shared_ptr<const std::vector<Value>> items) : items_(std::move(items)) {}
    std::string type_name() const override { return "LoopContext"; }
    std::string repr() const override {
        return str("<LoopContext ", index_ + 1, "/", items_->size(), ">");
    }
    Value attribute(const std::string& name) const override {
        const int64_t n = int64_t(items_->size()), i = int64_t(index_);
        if (name == "index") return Value::integer(i + 1);
        if (name == "index0") return Value::integer(i);
        if (name == "revindex") return Value::integer(n - i);
        if (name == "revindex0") return Value::integer(n - i - 1);
        if (name == "first") return Value::boolean(i == 0);
        if (name == "last") return Value::boolean(i == n - 1);
        if (name == "length") return Value::integer(n);
        if (name == "depth") return Value::integer(1);
        if (name == "depth0") return Value::integer(0);
        if (name == "previtem")
            return i > 0 ? (*items_)[size_t(i - 1)] : Value::undefined("there is no previous item");
        if (name == "nextitem")
            return i + 1 < n ? (*items_)[size_t(i + 1)] : Value::undefined("there is no next item");
        if (name == "cycle") return Value::object(std::make_shared<Cycle>(i));
        if (name == "changed") fail("not supported: loop.changed");
        return Object::attribute(name);
    }
    void advance(size_t index) { index_ = index; }

  private:
    class Cycle : public Object {
      public:
        explicit Cycle(int64_t index) : index_(index) {}
        std::string type_name() const override { return "method"; }
        bool callable() const override { return true; }
        Value call(Renderer&, Args& args) const override {
            if (args.positional.empty()) fail("no items for cycling given");
            return args.positional[size_t(index_) % args.positional.size()];
        }

      private:
        int64_t index_;
    };

    std::shared_ptr<const std::vector<Value>> items_;
    size_t index_ = 0;
};

enum class Flow { normal, break_, continue_ };

[[noreturn]] void fail_undefined(const Value& v) {
    fail(v.as_string().empty() ? "undefined value" : v.as_string());
}

int64_t checked(bool overflow, int64_t v) {
    if (overflow) fail("not supported: integer over 64 bits");
    return v;
}

class RenderState : public Renderer {
  public:
    RenderState(const Value& context, std::optional<std::tm> now)
        : context_(context), now_(now), root_(std::make_shared<Scope>(nullptr)) {}

    ~RenderState() override {
        for (const auto& ns : namespaces_) ns->clear();
    }

    std::string run(const Node& root) {
        std::string out;
        exec(root.body, root_, out);
        return out;
    }

    int line() const { return line_; }

    std::tm now() const override {
        if (now_) return *now_;
        const std::time_t t = std::time(nullptr);
        std::tm local{};
        localtime_r(&t, &local);
        return local;
    }

    void adopt(const std::shared_ptr<Namespace>& ns) override { namespaces_.push_back(ns); }

    Value call_macro(const Node& node, const std::weak_ptr<Scope>& defined_in, Args& args) {
        if (call_depth_ >= kMaxCallDepth)
            fail(str("macros nested over ", kMaxCallDepth, " calls deep (limit)"));
        Budget::step();
        const ScopePtr parent = defined_in.lock();
        if (!parent)
            fail("not supported: calling macro '" + node.name +
                 "' outside the block that defined it");
        const size_t n = node.targets.size();
        if (args.positional.size() > n)
            fail(str("macro '", node.name, "' takes not more than ", n, " argument(s)"));
        for (const auto& [name, v] : args.keyword)
            if (std::find(node.targets.begin(), node.targets.end(), name) == node.targets.end())
                fail(str("macro '", node.name, "' takes no keyword argument ", quoted(name)));
        auto scope = std::make_shared<Scope>(parent);
        for (size_t i = 0; i < n; ++i) {
            const std::string& param = node.targets[i];
            const Value* given = args.get(i, param.c_str());
            if (i < args.positional.size() && given != &args.positional[i])
                fail(str("macro '", node.name, "' got multiple values for argument ",
                         quoted(param)));
            if (given)
                scope->vars[param] = *given;
            else if (node.defaults[i])
                scope->vars[param] = eval(*node.defaults[i], scope);
            else
                scope->vars[param] =
                    Value::undefined("parameter " + quoted(param) + " was not provided");
        }
        ++call_depth_;
        std::string out;
        exec(node.body, scope, out);
        --call_depth_;
        return Value::string(std::move(out));
    }

  private:
    // Sets the line errors report while a node runs; keeps the innermost one when unwinding.
    struct At {
        At(RenderState& r, int line) : r_(r), saved_(r.line_) {
            r_.line_ = line;
            if (++r_.depth_ > kMaxEvalDepth)
                fail(str("template evaluation nested over ", kMaxEvalDepth, " deep (limit)"));
        }
        ~At() {
            --r_.depth_;
            if (!std::uncaught_exceptions()) r_.line_ = saved_;
        }
        RenderState& r_;
        int saved_;
    };

    static void write(std::string& out, std::string_view text) {
        check_length(uint64_t(out.size()) + text.size());
        out += text;
    }

    // ---- statements

    Flow exec(const std::vector<NodePtr>& body, const ScopePtr& scope, std::string& out) {
        for (const NodePtr& node : body) {
            const Flow flow = exec(*node, scope, out);
            if (flow != Flow::normal) return flow;
        }
        return Flow::normal;
    }

    Flow exec(const Node& n, const ScopePtr& scope, std::string& out) {
        At at(*this, n.line);
        switch (n.kind) {
            case Kind::text:
                write(out, n.name);
                break;
            case Kind::output: {
                const Value v = eval(*n.kids[0], scope);
                if (v.is_string())
                    write(out, v.as_string());
                else
                    write(out, v.str());
                break;
            }
            case Kind::if_:
                return exec(eval(*n.kids[0], scope).truthy() ? n.body : n.else_body, scope, out);
            case Kind::for_:
                return exec_for(n, scope, out);
            case Kind::set:
                exec_set(n, scope);
                break;
            case Kind::set_block: {
                std::string text;
                exec(n.body, scope, text);
                Value v = Value::string(std::move(text));
                if (n.kids[0]) v = eval_with_block(*n.kids[0], scope, v);
                scope->vars[n.targets[0]] = v;
                break;
            }
            case Kind::macro:
                scope->vars[n.name] = Value::object(std::make_shared<Macro>(n, scope));
                break;
            case Kind::break_:
                return Flow::break_;
            case Kind::continue_:
                return Flow::continue_;
            case Kind::generation:
                return exec(n.body, scope, out);
            case Kind::filter_block: {
                std::string text;
                exec(n.body, scope, text);
                const Value v = eval_with_block(*n.kids[0], scope, Value::string(std::move(text)));
                write(out, v.str());
                break;
            }
            case Kind::with: {
                auto inner = std::make_shared<Scope>(scope);
                for (size_t i = 0; i < n.targets.size(); ++i)
                    inner->vars[n.targets[i]] = eval(*n.kids[i], scope);
                return exec(n.body, inner, out);
            }
            default:
                fail("not a statement");
        }
        return Flow::normal;
    }

    // Binds `targets` to `value` (unpacked when the target is a tuple) in `scope`.
    static void bind(const Node& n, const Value& value, Scope& scope) {
        if (!n.flag) {
            scope.vars[n.targets[0]] = value;
            return;
        }
        const std::vector<Value> parts = iterate(value);
        if (parts.size() != n.targets.size())
            fail(str(parts.size() < n.targets.size() ? "not enough" : "too many",
                     " values to unpack (expected ", n.targets.size(), ", got ", parts.size(),
                     ")"));
        for (size_t i = 0; i < parts.size(); ++i) scope.vars[n.targets[i]] = parts[i];
    }

    void exec_set(const Node& n, const ScopePtr& scope) {
        const Value v = eval(*n.kids[0], scope);
        if (n.name.empty()) return bind(n, v, *scope);
        const Value* target = scope->find(n.targets[0]);
        if (!target || !target->is_object())
            fail("cannot assign attribute on non-namespace object " + quoted(n.targets[0]));
        target->as_object().set_attribute(n.name, v);
    }

    Flow exec_for(const Node& n, const ScopePtr& scope, std::string& out) {
        std::vector<Value> items = iterate(eval(*n.kids[0], scope));
        if (n.kids[1]) {  // {% for x in xs if cond %}: the loop sees only what passes
            std::vector<Value> kept;
            for (Value& item : items) {
                Budget::step();
                auto s = std::make_shared<Scope>(scope);
                bind(n, item, *s);
                if (eval(*n.kids[1], s).truthy()) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        if (items.empty()) return exec(n.else_body, scope, out);
        auto shared = std::make_shared<const std::vector<Value>>(std::move(items));
        auto loop = std::make_shared<Loop>(shared);
        const Value loop_value = Value::object(loop);
        for (size_t i = 0; i < shared->size(); ++i) {
            Budget::step();
            loop->advance(i);
            auto s = std::make_shared<Scope>(scope);
            s->vars["loop"] = loop_value;
            bind(n, (*shared)[i], *s);
            if (exec(n.body, s, out) == Flow::break_) break;
        }
        return Flow::normal;
    }

    // A filter chain whose innermost subject is the text of a filter block or block set.
    Value eval_with_block(const Node& chain, const ScopePtr& scope, const Value& block) {
        const Value saved = block_;
        block_ = block;
        Value v = eval(chain, scope);
        block_ = saved;
        return v;
    }

    // ---- expressions

    Value eval(const Node& n, const ScopePtr& scope) {
        At at(*this, n.line);
        switch (n.kind) {
            case Kind::literal:
                return n.value;
            case Kind::name:
                return lookup(n.name, scope);
            case Kind::list:
            case Kind::tuple: {
                std::vector<Value> items;
                for (const NodePtr& k : n.kids) items.push_back(eval(*k, scope));
                return n.kind == Kind::list ? Value::list(std::move(items))
                                            : Value::tuple(std::move(items));
            }
            case Kind::dict: {
                Value d = Value::dict();
                for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
                    const Value key = eval(*n.kids[i], scope);
                    if (key.is_sequence() && key.kind() != Value::Kind::tuple)
                        fail("unhashable type: 'list'");
                    if (key.is_dict() || key.is_undefined())
                        fail("unhashable type: '" + key.type_name() + "'");
                    d.set(key, eval(*n.kids[i + 1], scope));
                }
                return d;
            }
            case Kind::attribute:
                return get_attribute(eval(*n.kids[0], scope), n.name);
            case Kind::item:
                return get_item(eval(*n.kids[0], scope), eval(*n.kids[1], scope));
            case Kind::slice:
                return slice(n, scope);
            case Kind::call:
                return call(n, scope);
            case Kind::filter: {
                const Value subject = n.kids[0] ? eval(*n.kids[0], scope) : block_;
                Args args = arguments(n, scope);
                return apply_filter(n.name, subject, args);
            }
            case Kind::test: {
                const Value subject = eval(*n.kids[0], scope);
                Args args = arguments(n, scope);
                return Value::boolean(apply_test(n.name, subject, args) != n.flag);
            }
            case Kind::unary:
                return unary(n.name, eval(*n.kids[0], scope));
            case Kind::binary:
                return binary(n.name, eval(*n.kids[0], scope), eval(*n.kids[1], scope));
            case Kind::logical_and: {
                Value left = eval(*n.kids[0], scope);
                return left.truthy() ? eval(*n.kids[1], scope) : left;
            }
            case Kind::logical_or: {
                Value left = eval(*n.kids[0], scope);
                return left.truthy() ? left : eval(*n.kids[1], scope);
            }
            case Kind::compare:
                return compare(n, scope);
            case Kind::conditional:
                if (eval(*n.kids[1], scope).truthy()) return eval(*n.kids[0], scope);
                if (n.kids[2]) return eval(*n.kids[2], scope);
                return Value::undefined(
                    str("the inline if-expression on line ", n.line,
                        " evaluated to false and no else section was defined."));
            default:
                fail("not an expression");
        }
    }

    Value lookup(const std::string& name, const ScopePtr& scope) const {
        if (const Value* v = scope->find(name)) return *v;
        if (const Value* v = context_.entries().find(name)) return *v;
        if (auto g = global(name)) return *g;
        return Value::undefined("'" + name + "' is undefined");
    }

    Value slice(const Node& n, const ScopePtr& scope) {
        const Value obj = eval(*n.kids[0], scope);
        std::optional<int64_t> bounds[3];
        for (int i = 0; i < 3; ++i) {
            if (!n.kids[size_t(i) + 1]) continue;
            const Value b = eval(*n.kids[size_t(i) + 1], scope);
            if (b.is_none()) continue;
            if (!b.is_int()) fail("slice indices must be integers or None, not " + b.type_name());
            bounds[i] = b.as_int();
        }
        if (obj.is_undefined()) fail_undefined(obj);
        if (!obj.is_string() && !obj.is_sequence())
            return Value::undefined(str(obj.type_name(), " object cannot be sliced"));
        const int64_t step = bounds[2].value_or(1);
        if (step == 0) fail("slice step cannot be zero");
        return python_slice(obj, bounds[0], bounds[1], step);
    }

    Args arguments(const Node& n, const ScopePtr& scope) {
        Args args;
        for (size_t i = 0; i < n.args.size(); ++i) {
            Value v = eval(*n.args[i], scope);
            if (n.arg_names[i].empty())
                args.positional.push_back(std::move(v));
            else
                args.keyword.emplace_back(n.arg_names[i], std::move(v));
        }
        return args;
    }

    Value call(const Node& n, const ScopePtr& scope) {
        const Value callee = eval(*n.kids[0], scope);
        if (callee.is_undefined()) fail_undefined(callee);
        if (!callee.is_object() || !callee.as_object().callable())
            fail("'" + callee.type_name() + "' object is not callable");
        Args args = arguments(n, scope);
        Budget::step();
        return callee.as_object().call(*this, args);
    }

    static Value unary(const std::string& op, const Value& v) {
        if (op == "not") return Value::boolean(!v.truthy());
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) fail("bad operand type for unary " + op + ": '" + v.type_name() + "'");
        if (op == "+") return v.kind() == Value::Kind::real ? v : Value::integer(v.as_int());
        if (v.kind() == Value::Kind::real) return Value::real(-v.as_real());
        return Value::integer(checked(v.as_int() == INT64_MIN, -v.as_int()));
    }

    static Value binary(const std::string& op, const Value& a, const Value& b) {
        if (op == "~") {
            std::string s = a.str();
            const std::string t = b.str();
            check_length(uint64_t(s.size()) + t.size());
            return Value::string(s + t);
        }
        if (a.is_undefined()) fail_undefined(a);
        if (b.is_undefined()) fail_undefined(b);
        const auto unsupported = [&]() -> Value {
            fail(str("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '",
                     b.type_name(), "'"));
        };
        if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
        if (op == "+") {
            if (a.is_string() && b.is_string()) {
                check_length(uint64_t(a.as_string().size()) + b.as_string().size());
                return Value::string(a.as_string() + b.as_string());
            }
            if (a.is_sequence() && a.kind() == b.kind()) {
                std::vector<Value> items = a.items();
                items.insert(items.end(), b.items().begin(), b.items().end());
                return a.kind() == Value::Kind::list ? Value::list(std::move(items))
                                                     : Value::tuple(std::move(items));
            }
            if (a.is_string())
                fail(str("can only concatenate str (not \"", b.type_name(), "\") to str"));
            return unsupported();
        }
        if (op == "*" && (a.is_int() || b.is_int()) &&
            (a.is_string() || a.is_sequence() || b.is_string() || b.is_sequence())) {
            const Value& seq = a.is_int() ? b : a;
            const int64_t times = std::max<int64_t>(0, (a.is_int() ? a : b).as_int());
            const uint64_t unit =
                seq.is_string() ? seq.as_string().size() : 16 * seq.items().size();
            if (times && unit)
                check_length(unit > kMaxOutputBytes / uint64_t(times) ? UINT64_MAX
                                                                      : unit * uint64_t(times));
            if (seq.is_string()) {
                std::string out;
                for (int64_t i = 0; i < times; ++i) out += seq.as_string();
                return Value::string(std::move(out));
            }
            std::vector<Value> items;
            for (int64_t i = 0; i < times; ++i)
                items.insert(items.end(), seq.items().begin(), seq.items().end());
            return seq.kind() == Value::Kind::list ? Value::list(std::move(items))
                                                   : Value::tuple(std::move(items));
        }
        if (op == "%" && a.is_string()) fail("not supported: string formatting with '%'");
        return unsupported();
    }

    static Value arithmetic(const std::string& op, const Value& a, const Value& b) {
        if (a.is_int() && b.is_int() && op != "/") {
            const int64_t x = a.as_int(), y = b.as_int();
            int64_t r = 0;
            bool overflow = false;
            if (op == "+")
                overflow = __builtin_add_overflow(x, y, &r);
            else if (op == "-")
                overflow = __builtin_sub_overflow(x, y, &r);
            else if (op == "*")
                overflow = __builtin_mul_overflow(x, y, &r);
            if (op == "+" || op == "-" || op == "*") return Value::integer(checked(overflow, r));
            if (op == "//" || op == "%") {
                if (y == 0) fail("integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) checked(true, 0);
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;  // Python floors
                return Value::integer(op == "//" ? q : m);
            }
            if (op == "**") {
                if (y < 0) return Value::real(std::pow(double(x), double(y)));
                int64_t result = 1, base = x;
                for (int64_t e = y; e > 0; e >>= 1) {
                    if (e & 1) checked(__builtin_mul_overflow(result, base, &result), 0);
                    if (e > 1) checked(__builtin_mul_overflow(base, base, &base), 0);
                }
                return Value::integer(result);
            }
        }
        const double x = a.as_real(), y = b.as_real();
        if (op == "+") return Value::real(x + y);
        if (op == "-") return Value::real(x - y);
        if (op == "*") return Value::real(x * y);
        if (op == "**") {
            if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
            return Value::real(std::pow(x, y));
        }
        if (y == 0) fail(op == "/" ? "division by zero" : "float modulo or floor division by zero");
        if (op == "/") return Value::real(x / y);
        // CPython's float_divmod.
        double mod = std::fmod(x, y), div = (x - mod) / y;
        if (mod != 0) {
            if ((y < 0) != (mod < 0)) mod += y, div -= 1.0;
        } else {
            mod = std::copysign(0.0, y);
        }
        if (op == "%") return Value::real(mod);
        if (div == 0) return Value::real(std::copysign(0.0, x / y));
        double floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
        return Value::real(floordiv);
    }

    static bool contains(const Value& container, const Value& v) {
        if (container.is_undefined()) return false;
        if (container.is_string()) {
            if (!v.is_string())
                fail("'in <string>' requires string as left operand, not " + v.type_name());
            return container.as_string().find(v.as_string()) != std::string::npos;
        }
        if (container.is_dict()) return container.entries().find(v) != nullptr;
        if (container.is_sequence()) {
            for (const Value& item : container.items())
                if (item == v) return true;
            return false;
        }
        fail("argument of type '" + container.type_name() + "' is not iterable");
    }

    Value compare(const Node& n, const ScopePtr& scope) {
        Value left = eval(*n.kids[0], scope);
        for (size_t i = 0; i < n.ops.size(); ++i) {
            Value right = eval(*n.kids[i + 1], scope);
            const std::string& op = n.ops[i];
            bool r = false;
            if (op == "==")
                r = left == right;
            else if (op == "!=")
                r = !(left == right);
            else if (op == "in")
                r = contains(right, left);
            else if (op == "not in")
                r = !contains(right, left);
            else {
                if (left.is_undefined()) fail_undefined(left);
                if (right.is_undefined()) fail_undefined(right);
                if (op == "<")
                    r = python_less(left, right);
                else if (op == ">")
                    r = python_less(right, left);
                else if (op == "<=")
                    r = !python_less(right, left);
                else
                    r = !python_less(left, right);
            }
            if (!r) return Value::boolean(false);
            left = std::move(right);
        }
        return Value::boolean(true);
    }

    const Value& context_;
    std::optional<std::tm> now_;
    ScopePtr root_;
    std::vector<std::shared_ptr<Namespace>> namespaces_;
    Value block_;
    int line_ = 1;
    int depth_ = 0;
    int call_depth_ = 0;
};

Value Macro::call(Renderer& renderer, Args& args) const {
    return static_cast<RenderState&>(renderer).call_macro(node_, scope_, args);
}

// Refuses, when the template is read, the filters and tests this engine does not have (jinja2
// refuses unknown ones then too).
void check_names(const Node& n) {
    if (n.kind == Kind::filter && !has_filter(n.name))
        syntax_error(n.line, "not supported: filter '" + n.name + "'");
    if (n.kind == Kind::test && !has_test(n.name))
        syntax_error(n.line, "not supported: test '" + n.name + "'");
    for (const auto* list : {&n.kids, &n.args, &n.defaults, &n.body, &n.else_body})
        for (const NodePtr& k : *list)
            if (k) check_names(*k);
}

std::string render_with(const Node& root, const Value& context, std::optional<std::tm> now) {
    MT_CHECK(context.is_dict(), "chat template variables must be a dict, not ",
             context.type_name());
    Budget budget;
    RenderState state(context, now);
    try {
        return state.run(root);
    } catch (const TemplateFailure& e) {
        throw Error(str("chat template line ", state.line(), ": ", e.what()));
    }
}

}  // namespace

Template::Template(std::string_view source) : root_(parse_template(source)) {
    check_names(*root_);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
    return render_with(*root_, context, std::nullopt);
}

std::string Template::render(const Value& context, const std::tm& now) const {
    return render_with(*root_, context, now);
}

}  // namespace mt::text::jinja
