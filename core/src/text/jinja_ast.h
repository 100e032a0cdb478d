// The Jinja engine's tokens and syntax tree: the lexer applies the whitespace control
// transformers' environment sets (trim_blocks, lstrip_blocks, "-" markers), the parser builds
// one Node tree that the renderer walks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jinja_object.h"

namespace mt::text::jinja {

struct Token {
    enum class Type : uint8_t {
        text,
        variable_begin,
        variable_end,
        block_begin,
        block_end,
        name,
        string,
        integer,
        real,
        op,
        end
    };
    Type type;
    int line;
    std::string text;  // text, name, operator, the decoded string
    int64_t integer = 0;
    double real = 0;
};

// The tokens of `source` (newlines normalised, one trailing newline dropped as jinja2 does),
// ending with Type::end.
std::vector<Token> lex(std::string_view source);

using NodePtr = std::unique_ptr<Node>;

struct Node {
    enum class Kind : uint8_t {
        // expressions
        literal,
        name,
        list,
        tuple,
        dict,
        attribute,
        item,
        slice,
        call,
        filter,
        test,
        unary,
        binary,
        logical_and,
        logical_or,
        compare,
        conditional,
        // statements
        body,
        text,
        output,
        if_,
        for_,
        set,
        set_block,
        macro,
        break_,
        continue_,
        generation,
        filter_block,
        with
    };
    Kind kind;
    int line;
    std::string name;   // name, attribute, filter/test/macro name, operator, text
    Value value;        // literal
    bool flag = false;  // test: negated; for/set: the target is a tuple
    // Operands: a literal list's items, dict keys and values alternating, item's object and key,
    // slice's object and start/stop/step (null when absent), filter/test/call's subject,
    // compare's operands, conditional's value, condition and else (else may be null), for's
    // iterable and filter (may be null), set/output's value, with's values.
    std::vector<NodePtr> kids;
    std::vector<std::string> ops;  // compare's operators
    // Call, filter and test arguments; arg_names[i] is empty for a positional one.
    std::vector<NodePtr> args;
    std::vector<std::string> arg_names;
    // Targets: for/set/with names; set's attribute (`ns.attr`: targets = {ns}, name = attr);
    // macro parameters, with `defaults` (null where there is none).
    std::vector<std::string> targets;
    std::vector<NodePtr> defaults;
    std::vector<NodePtr> body, else_body;
};

// Throws mt::Error "chat template line N: <message>".
[[noreturn]] void syntax_error(int line, const std::string& message);

// Parses the whole template; throws mt::Error "chat template line N: ...".
NodePtr parse_template(std::string_view source);

}  // namespace mt::text::jinja
