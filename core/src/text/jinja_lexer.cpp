// The Jinja lexer, following jinja2's rules for transformers' environment: trim_blocks drops the
// newline after a block or comment tag, lstrip_blocks drops a line's indentation before one,
// "-" strips all whitespace on its side and "+" keeps it; {% raw %} passes text through.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "jinja_ast.h"
#include "mt/text/utf8.h"

namespace mt::text::jinja {

namespace {

// Python's \s over UTF-8: the length of the whitespace character at `at`, or 0.
size_t space_at(std::string_view s, size_t at) {
    if (at >= s.size()) return 0;
    const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + at;
    uint32_t cp = 0;
    const size_t len = decode_utf8(p, reinterpret_cast<const uint8_t*>(s.data()) + s.size(), cp);
    return len && is_python_space(cp) ? len : 0;
}

size_t skip_space(std::string_view s, size_t at) {
    while (size_t len = space_at(s, at)) at += len;
    return at;
}

std::string rstrip_space(std::string_view s) {
    return python_strip(s, nullptr, false, true);
}

bool all_space(std::string_view s) {
    return skip_space(s, 0) == s.size();
}

int newlines(std::string_view s) {
    return int(std::count(s.begin(), s.end(), '\n'));
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) {
        // jinja2 splits on \r\n, \r and \n, drops one trailing empty line, joins with \n.
        src_.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                src_ += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                src_ += source[i];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    }

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            size_t start = pos_;
            while ((start = src_.find('{', start)) != std::string::npos) {
                const char next = start + 1 < src_.size() ? src_[start + 1] : '\0';
                if (next == '%' || next == '{' || next == '#') break;
                ++start;
            }
            if (start == std::string::npos) {
                emit_text(src_.substr(pos_));
                pos_ = src_.size();
                break;
            }
            const char kind = src_[start + 1];
            const char sign =
                start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+')
                    ? src_[start + 2]
                    : '\0';
            const size_t raw_end = kind == '%' ? raw_begin(start + 2 + (sign ? 1 : 0)) : 0;
            std::string text = src_.substr(pos_, start - pos_);
            const int text_lines = newlines(text);
            text = strip_before(std::move(text), sign, kind != '{');
            emit_text(text);
            line_ += text_lines;
            pos_ = start + 2 + (sign ? 1 : 0);
            if (raw_end) {
                pos_ = raw_end;
                line_starting_ = src_[pos_ - 1] == '\n';
                raw_body();
            } else if (kind == '#') {
                comment();
            } else {
                tag(kind == '%');
            }
        }
        tokens_.push_back({Token::Type::end, line_, ""});
        return std::move(tokens_);
    }

  private:
    // The text before a tag: all trailing whitespace for "-"; for a block or comment tag
    // (lstrip_blocks), the indentation of its line unless "+".
    std::string strip_before(std::string text, char sign, bool block_or_comment) {
        if (sign == '-') return rstrip_space(text);
        if (sign == '+' || !block_or_comment) return text;
        const size_t line_at = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_at > 0 || line_starting_) && all_space(std::string_view(text).substr(line_at)))
            text.resize(line_at);
        return text;
    }

    void emit_text(std::string text) {
        if (!text.empty()) tokens_.push_back({Token::Type::text, line_, std::move(text)});
    }

    // After "{%" and its sign: past `raw %}` when this tag opens a raw block, else 0.
    size_t raw_begin(size_t at) {
        at = skip_space(src_, at);
        if (src_.compare(at, 3, "raw") != 0) return 0;
        at = skip_space(src_, at + 3);
        if (src_.compare(at, 3, "-%}") == 0) return skip_space(src_, at + 3);
        if (src_.compare(at, 2, "%}") == 0) return at + 2;
        return 0;
    }

    void raw_body() {
        for (size_t at = pos_; (at = src_.find("{%", at)) != std::string::npos; ++at) {
            size_t p = at + 2;
            const char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : 0;
            p = skip_space(src_, p + (sign ? 1 : 0));
            if (src_.compare(p, 6, "endraw") != 0) continue;
            p = skip_space(src_, p + 6);
            size_t end = 0;
            if (src_.compare(p, 3, "+%}") == 0)
                end = p + 3;
            else if (src_.compare(p, 3, "-%}") == 0)
                end = skip_space(src_, p + 3);
            else if (src_.compare(p, 2, "%}") == 0)
                end = trim_newline(p + 2);
            if (!end) continue;
            std::string text = src_.substr(pos_, at - pos_);
            const int text_lines = newlines(src_.substr(pos_, end - pos_));
            emit_text(strip_before(std::move(text), sign, true));
            line_ += text_lines;
            pos_ = end;
            line_starting_ = src_[end - 1] == '\n';
            return;
        }
        syntax_error(line_, "missing end of raw directive");
    }

    size_t trim_newline(size_t at) const {
        return at < src_.size() && src_[at] == '\n' ? at + 1 : at;
    }

    void comment() {
        const size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) syntax_error(line_, "missing end of comment tag");
        size_t end = close + 2;
        const char sign = close > pos_ ? src_[close - 1] : '\0';
        if (sign == '-')
            end = skip_space(src_, end);
        else if (sign != '+')
            end = trim_newline(end);
        line_ += newlines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end;
        line_starting_ = src_[end - 1] == '\n';
    }

    // The tokens of a {{ }} or {% %} tag up to its end (the end only counts outside brackets).
    void tag(bool block) {
        const int open_line = line_;
        tokens_.push_back(
            {block ? Token::Type::block_begin : Token::Type::variable_begin, line_, ""});
        std::string brackets;
        for (;;) {
            const size_t after_space = skip_space(src_, pos_);
            line_ += newlines(std::string_view(src_).substr(pos_, after_space - pos_));
            pos_ = after_space;
            if (pos_ >= src_.size())
                syntax_error(open_line, block ? "unexpected end of template, expected '%}'"
                                              : "unexpected end of template, expected '}}'");
            if (brackets.empty() && tag_end(block)) return;
            token(brackets);
        }
    }

    bool tag_end(bool block) {
        const std::string_view rest = std::string_view(src_).substr(pos_);
        const char* close = block ? "%}" : "}}";
        size_t end = 0;
        if (rest.starts_with(std::string("-") + close))
            end = skip_space(src_, pos_ + 3);
        else if (block && rest.starts_with("+%}"))
            end = pos_ + 3;
        else if (rest.starts_with(close))
            end = block ? trim_newline(pos_ + 2) : pos_ + 2;
        if (!end) return false;
        tokens_.push_back({block ? Token::Type::block_end : Token::Type::variable_end, line_, ""});
        line_ += newlines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end;
        line_starting_ = src_[end - 1] == '\n';
        return true;
    }

    void token(std::string& brackets) {
        const char c = src_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c))) return number();
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t end = pos_;
            while (end < src_.size() &&
                   (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
                ++end;
            tokens_.push_back({Token::Type::name, line_, src_.substr(pos_, end - pos_)});
            pos_ = end;
            return;
        }
        if (c == '\'' || c == '"') return string_literal(c);
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/",
                                           "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                           "<",  ">",  "=",  ".",  ":",  "|",  ",", ";"};
        for (const char* op : kOps) {
            if (src_.compare(pos_, std::strlen(op), op) != 0) continue;
            const std::string o = op;
            if (o == "(" || o == "[" || o == "{") {
                brackets += o == "(" ? ')' : o == "[" ? ']' : '}';
            } else if (o == ")" || o == "]" || o == "}") {
                if (brackets.empty()) syntax_error(line_, "unexpected '" + o + "'");
                if (brackets.back() != o[0])
                    syntax_error(line_,
                                 "unexpected '" + o + "', expected '" + brackets.back() + "'");
                brackets.pop_back();
            }
            tokens_.push_back({Token::Type::op, line_, o});
            pos_ += o.size();
            return;
        }
        syntax_error(line_, "unexpected char " + quoted(src_.substr(pos_, 1)));
    }

    // Digits with optional "_" separators starting at `at`; returns the end (== at: none).
    size_t digits(size_t at, int (*is_digit)(int) = std::isdigit) const {
        size_t end = at;
        while (end < src_.size()) {
            if (is_digit(static_cast<unsigned char>(src_[end])))
                ++end;
            else if (src_[end] == '_' && end > at && end + 1 < src_.size() &&
                     is_digit(static_cast<unsigned char>(src_[end + 1])))
                ++end;
            else
                break;
        }
        return end;
    }

    void number() {
        const auto clean = [&](size_t b, size_t e) {
            std::string t = src_.substr(b, e - b);
            t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
            return t;
        };
        size_t end = digits(pos_);
        // A float: digits, then a fraction and/or an exponent (not right after a '.', where
        // digits are an attribute: x.0.1).
        size_t float_end = 0;
        if (pos_ == 0 || src_[pos_ - 1] != '.') {
            size_t fraction_end = 0, exponent_end = 0;
            if (end < src_.size() && src_[end] == '.' && digits(end + 1) > end + 1)
                fraction_end = digits(end + 1);
            const size_t e = fraction_end ? fraction_end : end;
            if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
                size_t q = e + 1;
                if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
                if (digits(q) > q) exponent_end = digits(q);
            }
            float_end = exponent_end ? exponent_end : fraction_end;
        }
        if (float_end) {
            const std::string t = clean(pos_, float_end);
            tokens_.push_back({Token::Type::real, line_, t, 0, std::strtod(t.c_str(), nullptr)});
            pos_ = float_end;
            return;
        }
        int base = 10;
        size_t body = pos_;
        if (src_[pos_] == '0' && pos_ + 1 < src_.size()) {
            const char x = char(std::tolower(static_cast<unsigned char>(src_[pos_ + 1])));
            const auto radix = [&](int b, int (*is)(int)) {
                size_t q = pos_ + 2;
                if (q < src_.size() && src_[q] == '_') ++q;
                if (digits(q, is) > q) base = b, body = pos_ + 2, end = digits(q, is);
            };
            if (x == 'x') radix(16, std::isxdigit);
            if (x == 'o') radix(8, [](int ch) { return int(ch >= '0' && ch <= '7'); });
            if (x == 'b') radix(2, [](int ch) { return int(ch == '0' || ch == '1'); });
        }
        const std::string t = clean(body, end);
        errno = 0;
        const unsigned long long v = std::strtoull(t.c_str(), nullptr, base);
        if (errno == ERANGE || v > uint64_t(INT64_MAX))
            syntax_error(line_, "not supported: integer literal " + quoted(t) + " over 64 bits");
        tokens_.push_back({Token::Type::integer, line_, t, int64_t(v)});
        pos_ = end;
    }

    void string_literal(char quote) {
        const int open_line = line_;
        std::string out;
        size_t p = pos_ + 1;
        const auto hex = [&](size_t n) {
            if (p + n > src_.size()) syntax_error(line_, "truncated \\x, \\u or \\U escape");
            uint32_t v = 0;
            for (size_t i = 0; i < n; ++i) {
                const char h = src_[p + i];
                if (!std::isxdigit(static_cast<unsigned char>(h)))
                    syntax_error(line_, "truncated \\x, \\u or \\U escape");
                v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h))
                                          ? h - '0'
                                          : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
            }
            p += n;
            if (v > 0x10FFFF) syntax_error(line_, "illegal Unicode character in escape");
            return v;
        };
        for (;;) {
            if (p >= src_.size()) syntax_error(open_line, "unexpected end of string literal");
            const char c = src_[p];
            if (c == quote) break;
            if (c == '\n') ++line_;
            if (c != '\\') {
                out += c;
                ++p;
                continue;
            }
            if (p + 1 >= src_.size()) syntax_error(open_line, "unexpected end of string literal");
            const char e = src_[p + 1];
            p += 2;
            switch (e) {
                case '\n':
                    ++line_;
                    break;  // a line continuation
                case '\\':
                    out += '\\';
                    break;
                case '\'':
                    out += '\'';
                    break;
                case '"':
                    out += '"';
                    break;
                case 'a':
                    out += '\a';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'v':
                    out += '\v';
                    break;
                case 'x':
                    append_utf8(out, hex(2));
                    break;
                case 'u':
                    append_utf8(out, hex(4));
                    break;
                case 'U':
                    append_utf8(out, hex(8));
                    break;
                case 'N':
                    syntax_error(line_, "not supported: \\N{...} escape");
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t v = uint32_t(e - '0');
                        for (int i = 0;
                             i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i)
                            v = v * 8 + uint32_t(src_[p++] - '0');
                        append_utf8(out, v);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        tokens_.push_back({Token::Type::string, open_line, std::move(out)});
        pos_ = p + 1;
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace mt::text::jinja
