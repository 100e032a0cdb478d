// The Jinja parser: jinja2's grammar (its precedence, `is` tests, filters binding tighter than
// operators, unary minus tighter than **) for the statements chat templates use; anything else
// is refused naming the tag. Nesting is bounded so a hostile template cannot exhaust the stack.
#include <algorithm>
#include <initializer_list>

#include "jinja_ast.h"

namespace mt::text::jinja {

void syntax_error(int line, const std::string& message) {
    throw Error(str("chat template line ", line, ": ", message));
}

namespace {

using Kind = Node::Kind;
using Type = Token::Type;

NodePtr make(Kind kind, int line) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = line;
    return n;
}

std::string describe(const Token& t) {
    switch (t.type) {
        case Type::text:
            return "template data";
        case Type::variable_begin:
            return "'{{'";
        case Type::variable_end:
            return "'}}'";
        case Type::block_begin:
            return "'{%'";
        case Type::block_end:
            return "'%}'";
        case Type::string:
            return "string " + quoted(t.text);
        case Type::end:
            return "end of template";
        default:
            return quoted(t.text);
    }
}

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    NodePtr parse() {
        auto root = make(Kind::body, 1);
        std::string found;
        root->body = subparse({}, found);
        return root;
    }

  private:
    // Counts nesting while alive; refuses past kMaxDepth.
    struct Nest {
        explicit Nest(Parser& p) : p_(p) {
            if (++p_.depth_ > int(kMaxDepth))
                syntax_error(p_.cur().line, str("template nested over ", kMaxDepth, " deep"));
        }
        ~Nest() { --p_.depth_; }
        Parser& p_;
    };

    // One more link of a left-deep chain (a + b + c, a.b.c, x|f|g) at the current depth.
    void grow(int& chain) {
        if (depth_ + ++chain > int(kMaxDepth))
            syntax_error(cur().line, str("expression nested over ", kMaxDepth, " deep"));
    }

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
    void next() {
        if (i_ + 1 < t_.size()) ++i_;
    }
    bool is_op(const char* op) const { return cur().type == Type::op && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == Type::name && cur().text == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    void expect_op(const char* op, const char* after) {
        if (!skip_op(op))
            syntax_error(cur().line,
                         str("expected '", op, "' after ", after, ", got ", describe(cur())));
    }
    std::string expect_name(const char* what) {
        if (cur().type != Type::name)
            syntax_error(cur().line, str("expected ", what, ", got ", describe(cur())));
        std::string name = cur().text;
        next();
        return name;
    }
    void expect_block_end(const std::string& after) {
        if (cur().type != Type::block_end)
            syntax_error(cur().line, str("expected '%}' after ", after, ", got ", describe(cur())));
        next();
    }

    // Statements up to a block tag named in `ends` (its name is consumed and put in `found`),
    // or the end of the template when `ends` is empty.
    std::vector<NodePtr> subparse(std::initializer_list<const char*> ends, std::string& found) {
        Nest nest(*this);
        std::vector<NodePtr> body;
        for (;;) {
            const Token& t = cur();
            if (t.type == Type::end) {
                if (ends.size() == 0) return body;
                std::string names;
                for (const char* e : ends)
                    names += std::string(names.empty() ? "'" : " or '") + e + "'";
                syntax_error(t.line, "unexpected end of template, expected " + names);
            }
            if (t.type == Type::text) {
                auto n = make(Kind::text, t.line);
                n->name = t.text;
                body.push_back(std::move(n));
                next();
            } else if (t.type == Type::variable_begin) {
                auto n = make(Kind::output, t.line);
                next();
                n->kids.push_back(parse_tuple(true, false));
                if (cur().type != Type::variable_end)
                    syntax_error(cur().line,
                                 "expected '}}' after an expression, got " + describe(cur()));
                next();
                body.push_back(std::move(n));
            } else if (t.type == Type::block_begin) {
                next();
                if (cur().type == Type::name) {
                    for (const char* e : ends)
                        if (cur().text == e) {
                            found = e;
                            next();
                            return body;
                        }
                    const std::string& tag = cur().text;
                    if (ends.size() && (tag.starts_with("end") || tag == "else" || tag == "elif")) {
                        std::string names;
                        for (const char* e : ends)
                            names += std::string(names.empty() ? "'" : " or '") + e + "'";
                        syntax_error(cur().line, "unexpected tag '" + tag + "', expected " + names);
                    }
                }
                body.push_back(statement());
            } else {
                syntax_error(t.line, "unexpected " + describe(t));
            }
        }
    }

    NodePtr statement() {
        const int line = cur().line;
        const std::string tag = expect_name("a tag name after '{%'");
        if (tag == "if") return if_statement(line);
        if (tag == "for") return for_statement(line);
        if (tag == "set") return set_statement(line);
        if (tag == "macro") return macro_statement(line);
        if (tag == "break" || tag == "continue") {
            if (loops_ == 0) syntax_error(line, "'" + tag + "' outside of a loop");
            expect_block_end("'" + tag + "'");
            return make(tag == "break" ? Kind::break_ : Kind::continue_, line);
        }
        if (tag == "generation") return block_with_body(Kind::generation, line, "generation");
        if (tag == "filter") {  // {% filter name(args) | more %}: the first name has no '|'
            auto n = make(Kind::filter_block, line);
            auto first = make(Kind::filter, cur().line);
            first->name = expect_name("a filter name");
            if (is_op("(")) {
                first = call(std::move(first), nullptr);
            } else {
                first->kids.push_back(nullptr);
            }
            n->kids.push_back(filters(std::move(first)));
            return block_body(std::move(n), "endfilter", "'filter'");
        }
        if (tag == "with") return with_statement(line);
        static const char* const kEnds[] = {"endif",         "endfor", "endset",  "endmacro",
                                            "else",          "elif",   "endwith", "endfilter",
                                            "endgeneration", "endraw", "endcall", "endblock"};
        for (const char* e : kEnds)
            if (tag == e) syntax_error(line, "unexpected tag '" + tag + "'");
        syntax_error(line, "not supported: tag '" + tag + "'");
    }

    NodePtr block_with_body(Kind kind, int line, const std::string& tag) {
        expect_block_end("'" + tag + "'");
        auto n = make(kind, line);
        std::string found;
        const std::string end = "end" + tag;
        n->body = subparse({end.c_str()}, found);
        expect_block_end("'" + end + "'");
        return n;
    }

    NodePtr block_body(NodePtr n, const char* end, const char* after) {
        expect_block_end(after);
        std::string found;
        n->body = subparse({end}, found);
        expect_block_end(str("'", end, "'"));
        return n;
    }

    NodePtr if_statement(int line) {
        auto n = make(Kind::if_, line);
        n->kids.push_back(parse_tuple(false, false));
        expect_block_end("the 'if' condition");
        std::string found;
        n->body = subparse({"elif", "else", "endif"}, found);
        if (found == "elif") {
            n->else_body.push_back(if_statement(cur().line));
            return n;
        }
        if (found == "else") {
            expect_block_end("'else'");
            n->else_body = subparse({"endif"}, found);
        }
        expect_block_end("'endif'");
        return n;
    }

    // Names (a, b or (a, b)) for a for loop, set or with.
    void targets(Node& n) {
        const bool parens = skip_op("(");
        do {
            if (parens && is_op(")")) break;
            n.targets.push_back(expect_name("a variable name"));
        } while (skip_op(",") && (n.flag = true));
        if (parens) {
            n.flag = true;
            expect_op(")", "the names");
        }
        for (const std::string& name : n.targets)
            if (name == "true" || name == "false" || name == "none" || name == "True" ||
                name == "False" || name == "None")
                syntax_error(n.line, "cannot assign to " + quoted(name));
    }

    NodePtr for_statement(int line) {
        auto n = make(Kind::for_, line);
        targets(*n);
        if (!skip_name("in")) syntax_error(cur().line, "expected 'in' after the loop variables");
        n->kids.push_back(parse_tuple(false, false, "recursive"));
        n->kids.push_back(skip_name("if") ? expression(true) : nullptr);
        if (is_name("recursive")) syntax_error(cur().line, "not supported: recursive loops");
        expect_block_end("the 'for' loop");
        std::string found;
        ++loops_;
        n->body = subparse({"else", "endfor"}, found);
        --loops_;
        if (found == "else") {
            expect_block_end("'else'");
            n->else_body = subparse({"endfor"}, found);
        }
        expect_block_end("'endfor'");
        return n;
    }

    NodePtr set_statement(int line) {
        auto n = make(Kind::set, line);
        if (cur().type == Type::name && peek().type == Type::op && peek().text == ".") {
            n->targets.push_back(cur().text);
            next();
            next();
            n->name = expect_name("an attribute name");
        } else {
            targets(*n);
        }
        if (skip_op("=")) {
            n->kids.push_back(parse_tuple(true, false));
            expect_block_end("'set'");
            return n;
        }
        if (!n->name.empty() || n->flag) syntax_error(line, "expected '=' in 'set'");
        n->kind = Kind::set_block;
        n->kids.push_back(is_op("|") ? filters(nullptr) : nullptr);
        return block_body(std::move(n), "endset", "'set'");
    }

    NodePtr macro_statement(int line) {
        auto n = make(Kind::macro, line);
        n->name = expect_name("the macro's name");
        expect_op("(", "the macro's name");
        while (!skip_op(")")) {
            if (!n->targets.empty()) expect_op(",", "a macro parameter");
            if (skip_op(")")) break;
            n->targets.push_back(expect_name("a parameter name"));
            n->defaults.push_back(skip_op("=") ? expression(true) : nullptr);
        }
        const int loops = loops_;
        loops_ = 0;  // break/continue do not cross a macro
        auto m = block_body(std::move(n), "endmacro", "the macro's parameters");
        loops_ = loops;
        return m;
    }

    NodePtr with_statement(int line) {
        auto n = make(Kind::with, line);
        while (cur().type != Type::block_end) {
            if (!n->targets.empty()) expect_op(",", "a 'with' assignment");
            n->targets.push_back(expect_name("a variable name"));
            expect_op("=", "the name in 'with'");
            n->kids.push_back(expression(true));
        }
        return block_body(std::move(n), "endwith", "'with'");
    }

    // ---- expressions

    // Expressions separated by commas: a tuple when there is a comma (or `explicit_parens` and
    // none at all: "()").
    NodePtr parse_tuple(bool with_condexpr, bool explicit_parens, const char* extra_end = nullptr) {
        const int line = cur().line;
        std::vector<NodePtr> items;
        bool is_tuple = false;
        for (;;) {
            if (!items.empty()) expect_op(",", "a tuple item");
            const bool at_end = cur().type == Type::variable_end || cur().type == Type::block_end ||
                                is_op(")") || (extra_end && is_name(extra_end));
            if (at_end) break;
            items.push_back(expression(with_condexpr));
            if (is_op(","))
                is_tuple = true;
            else
                break;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items.front());
            if (!explicit_parens)
                syntax_error(line, "expected an expression, got " + describe(cur()));
        }
        auto n = make(Kind::tuple, line);
        n->kids = std::move(items);
        return n;
    }

    NodePtr expression(bool with_condexpr) {
        Nest nest(*this);
        if (!with_condexpr) return logical_or();
        NodePtr value = logical_or();
        int chain = 0;
        while (is_name("if")) {
            grow(chain);
            const int line = cur().line;
            next();
            auto n = make(Kind::conditional, line);
            n->kids.push_back(std::move(value));
            n->kids.push_back(logical_or());
            n->kids.push_back(skip_name("else") ? expression(true) : nullptr);
            value = std::move(n);
        }
        return value;
    }

    NodePtr binary(Kind kind, const std::string& op, NodePtr left, NodePtr right, int line) {
        auto n = make(kind, line);
        n->name = op;
        n->kids.push_back(std::move(left));
        n->kids.push_back(std::move(right));
        return n;
    }

    NodePtr logical_or() {
        NodePtr left = logical_and();
        int chain = 0;
        while (is_name("or")) {
            grow(chain);
            const int line = cur().line;
            next();
            left = binary(Kind::logical_or, "or", std::move(left), logical_and(), line);
        }
        return left;
    }

    NodePtr logical_and() {
        NodePtr left = logical_not();
        int chain = 0;
        while (is_name("and")) {
            grow(chain);
            const int line = cur().line;
            next();
            left = binary(Kind::logical_and, "and", std::move(left), logical_not(), line);
        }
        return left;
    }

    NodePtr logical_not() {
        if (!is_name("not")) return compare();
        Nest nest(*this);
        auto n = make(Kind::unary, cur().line);
        next();
        n->name = "not";
        n->kids.push_back(logical_not());
        return n;
    }

    NodePtr compare() {
        const int line = cur().line;
        NodePtr first = math1();
        auto n = make(Kind::compare, line);
        for (;;) {
            if (cur().type == Type::op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                 cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                n->ops.push_back(cur().text);
                next();
            } else if (is_name("in")) {
                n->ops.push_back("in");
                next();
            } else if (is_name("not") && peek().type == Type::name && peek().text == "in") {
                n->ops.push_back("not in");
                next();
                next();
            } else {
                break;
            }
            n->kids.push_back(math1());
        }
        if (n->ops.empty()) return first;
        n->kids.insert(n->kids.begin(), std::move(first));
        return n;
    }

    NodePtr left_assoc(NodePtr (Parser::*operand)(), std::initializer_list<const char*> ops) {
        NodePtr left = (this->*operand)();
        int chain = 0;
        for (;;) {
            const char* found = nullptr;
            for (const char* op : ops)
                if (is_op(op)) found = op;
            if (!found) return left;
            grow(chain);
            const int line = cur().line;
            next();
            left = binary(Kind::binary, found, std::move(left), (this->*operand)(), line);
        }
    }

    NodePtr math1() { return left_assoc(&Parser::concat, {"+", "-"}); }
    NodePtr concat() { return left_assoc(&Parser::math2, {"~"}); }
    NodePtr math2() { return left_assoc(&Parser::power, {"*", "/", "//", "%"}); }
    NodePtr power() { return left_assoc(&Parser::unary_filtered, {"**"}); }
    NodePtr unary_filtered() { return unary(true); }

    NodePtr unary(bool with_filter) {
        Nest nest(*this);
        NodePtr node;
        if (is_op("-") || is_op("+")) {
            node = make(Kind::unary, cur().line);
            node->name = cur().text;
            next();
            node->kids.push_back(unary(false));
        } else {
            node = primary();
        }
        node = postfix(std::move(node));
        return with_filter ? filters(std::move(node)) : std::move(node);
    }

    NodePtr primary() {
        const Token& t = cur();
        if (t.type == Type::name) {
            const std::string& s = t.text;
            auto n = make(Kind::literal, t.line);
            if (s == "true" || s == "True")
                n->value = Value::boolean(true);
            else if (s == "false" || s == "False")
                n->value = Value::boolean(false);
            else if (s == "none" || s == "None")
                n->value = Value::none();
            else
                n->kind = Kind::name, n->name = s;
            next();
            return n;
        }
        if (t.type == Type::string) {
            auto n = make(Kind::literal, t.line);
            std::string s;
            while (cur().type == Type::string) s += cur().text, next();
            n->value = Value::string(std::move(s));
            return n;
        }
        if (t.type == Type::integer || t.type == Type::real) {
            auto n = make(Kind::literal, t.line);
            n->value = t.type == Type::integer ? Value::integer(t.integer) : Value::real(t.real);
            next();
            return n;
        }
        if (is_op("(")) {
            next();
            NodePtr n = parse_tuple(true, true);
            expect_op(")", "an expression in parentheses");
            return n;
        }
        if (is_op("[")) {
            auto n = make(Kind::list, t.line);
            next();
            while (!skip_op("]")) {
                if (!n->kids.empty()) expect_op(",", "a list item");
                if (skip_op("]")) break;
                n->kids.push_back(expression(true));
            }
            return n;
        }
        if (is_op("{")) {
            auto n = make(Kind::dict, t.line);
            next();
            while (!skip_op("}")) {
                if (!n->kids.empty()) expect_op(",", "a dict item");
                if (skip_op("}")) break;
                n->kids.push_back(expression(true));
                expect_op(":", "a dict key");
                n->kids.push_back(expression(true));
            }
            return n;
        }
        syntax_error(t.line, "unexpected " + describe(t));
    }

    NodePtr postfix(NodePtr node) {
        int chain = 0;
        for (;; grow(chain)) {
            const int line = cur().line;
            if (skip_op(".")) {
                if (cur().type == Type::name) {
                    auto n = make(Kind::attribute, line);
                    n->name = cur().text;
                    n->kids.push_back(std::move(node));
                    node = std::move(n);
                } else if (cur().type == Type::integer) {
                    auto n = make(Kind::item, line);
                    n->kids.push_back(std::move(node));
                    auto key = make(Kind::literal, line);
                    key->value = Value::integer(cur().integer);
                    n->kids.push_back(std::move(key));
                    node = std::move(n);
                } else {
                    syntax_error(line, "expected a name or number after '.'");
                }
                next();
            } else if (skip_op("[")) {
                node = subscript(std::move(node), line);
            } else if (is_op("(")) {
                node = call(make(Kind::call, line), std::move(node));
            } else {
                return node;
            }
        }
    }

    NodePtr subscript(NodePtr object, int line) {
        std::vector<NodePtr> keys;
        while (!skip_op("]")) {
            if (!keys.empty()) expect_op(",", "a subscript");
            keys.push_back(subscribed());
        }
        if (keys.empty()) syntax_error(line, "expected a subscript expression");
        // (Python would index with a tuple holding a slice object, which no value here takes.)
        if (keys.size() > 1)
            for (const NodePtr& k : keys)
                if (k->kind == Kind::slice)
                    syntax_error(line, "not supported: a slice among several subscripts");
        auto n = make(Kind::item, line);
        n->kids.push_back(std::move(object));
        if (keys.size() == 1 && keys.front()->kind == Kind::slice) {
            n->kind = Kind::slice;
            for (auto& k : keys.front()->kids) n->kids.push_back(std::move(k));
            return n;
        }
        if (keys.size() == 1) {
            n->kids.push_back(std::move(keys.front()));
        } else {
            auto t = make(Kind::tuple, line);
            t->kids = std::move(keys);
            n->kids.push_back(std::move(t));
        }
        return n;
    }

    // One subscript: an expression, or a slice (a node of kind slice with start/stop/step kids).
    NodePtr subscribed() {
        const int line = cur().line;
        NodePtr start;
        if (!is_op(":")) {
            start = expression(true);
            if (!is_op(":")) return start;
        }
        next();
        auto n = make(Kind::slice, line);
        n->kids.push_back(std::move(start));
        const auto part = [&] {
            return is_op("]") || is_op(",") || is_op(":") ? nullptr : expression(true);
        };
        n->kids.push_back(part());
        n->kids.push_back(skip_op(":") ? part() : nullptr);
        return n;
    }

    // "(args)" into n (a call, filter or test) whose subject is `subject`.
    NodePtr call(NodePtr n, NodePtr subject) {
        expect_op("(", "a callable");
        n->kids.push_back(std::move(subject));
        while (!skip_op(")")) {
            if (!n->args.empty()) expect_op(",", "an argument");
            if (skip_op(")")) break;
            if (is_op("*") || is_op("**"))
                syntax_error(cur().line, "not supported: *args and **kwargs");
            std::string name;
            if (cur().type == Type::name && peek().type == Type::op && peek().text == "=") {
                name = cur().text;
                next();
                next();
            } else if (!n->arg_names.empty() && !n->arg_names.back().empty()) {
                syntax_error(cur().line, "a positional argument follows keyword arguments");
            }
            n->args.push_back(expression(true));
            n->arg_names.push_back(std::move(name));
        }
        return n;
    }

    // "| name(args)" filters and "is [not] name args" tests after `node` (null: a filter block's).
    NodePtr filters(NodePtr node) {
        int chain = 0;
        for (;; grow(chain)) {
            const int line = cur().line;
            if (skip_op("|")) {
                auto n = make(Kind::filter, line);
                n->name = expect_name("a filter name");
                if (is_op("(")) {
                    node = call(std::move(n), std::move(node));
                } else {
                    n->kids.push_back(std::move(node));
                    node = std::move(n);
                }
            } else if (node && skip_name("is")) {
                auto n = make(Kind::test, line);
                n->flag = skip_name("not");
                n->name = expect_name("a test name");
                if (is_op("(")) {
                    node = call(std::move(n), std::move(node));
                    continue;
                }
                n->kids.push_back(std::move(node));
                const Token& t = cur();
                const bool argument =
                    (t.type == Type::name || t.type == Type::string || t.type == Type::integer ||
                     t.type == Type::real || is_op("(") || is_op("[") || is_op("{")) &&
                    !is_name("else") && !is_name("or") && !is_name("and");
                if (argument) {
                    if (is_name("is"))
                        syntax_error(t.line, "you cannot chain multiple tests with is");
                    n->args.push_back(postfix(primary()));
                    n->arg_names.emplace_back();
                }
                node = std::move(n);
            } else if (node && is_op("(")) {
                node = call(make(Kind::call, line), std::move(node));
            } else {
                return node;
            }
        }
    }

    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
    int loops_ = 0;
};

}  // namespace

NodePtr parse_template(std::string_view source) {
    return Parser(lex(source)).parse();
}

}  // namespace mt::text::jinja
