#include "regex_translation.h"

#include <array>
#include <vector>

#include "mt/error.h"
#include "mt/text/utf8.h"

namespace mt::text::detail {

namespace {

// The general categories \p{..} may name: the same sets in every engine once the text's
// characters carry Unicode 16's categories (see unicode_stand_ins.inc).
constexpr std::array<std::string_view, 36> kCategories = {
    "L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N",  "Nd",
    "Nl", "No", "P",  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S",  "Sm",
    "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf", "Co", "Cn"};

class Translator {
  public:
    explicit Translator(std::string_view pattern) : p_(pattern) {}

    TranslatedPattern run() {
        caseless_.push_back(false);
        while (i_ < p_.size()) {
            if (in_class_)
                class_item();
            else
                item();
        }
        MT_CHECK(!in_class_, "an unterminated character class");
        MT_CHECK(caseless_.size() == 1, "an unbalanced '('");
        return std::move(out_);
    }

  private:
    [[noreturn]] void refuse(std::string_view what) const {
        MT_FAIL(what, " (at offset ", i_, ") is not supported");
    }
    bool caseless() const { return caseless_.back(); }
    bool at(std::string_view s) const { return p_.compare(i_, s.size(), s) == 0; }

    void item() {
        const char c = p_[i_];
        switch (c) {
            case '\\':
                escape();
                return;
            case '[':
                out_.pcre2 += '[';
                ++i_;
                if (i_ < p_.size() && p_[i_] == '^') {
                    out_.pcre2 += '^';
                    ++i_;
                }
                in_class_ = true;
                class_first_ = true;
                return;
            case '(':
                group();
                return;
            case ')':
                MT_CHECK(caseless_.size() > 1, "an unbalanced ')' at offset ", i_);
                caseless_.pop_back();
                out_.pcre2 += ')';
                ++i_;
                return;
            case '^':
            case '$':
                refuse(str("the anchor '", c, "'"));
            case '{':
                if (at("{,")) refuse("the quantifier {,n}");
                break;
            default:
                break;
        }
        literal();
    }

    void class_item() {
        const char c = p_[i_];
        if (c == ']' && !class_first_) {
            out_.pcre2 += ']';
            ++i_;
            in_class_ = false;
            return;
        }
        class_first_ = false;
        if (c == '[') refuse(at("[:") ? "a POSIX class [:name:]" : "a nested character class");
        if (at("&&") || at("--") || at("~~")) refuse(str("the class operation '", c, c, "'"));
        if (c == '\\')
            escape();
        else
            literal();
    }

    // One character copied as it is (a multi-byte one whole).
    void literal() {
        const auto* s = reinterpret_cast<const uint8_t*>(p_.data());
        uint32_t cp = 0;
        const size_t len = decode_utf8(s + i_, s + p_.size(), cp);
        MT_CHECK(len > 0, "the pattern is not valid UTF-8 at byte ", i_);
        if (cp >= 0x80) non_ascii("a literal character outside ASCII");
        out_.pcre2.append(p_, i_, len);
        i_ += len;
    }

    void non_ascii(std::string_view what) {
        if (caseless()) refuse(str("(?i) over ", what));
        out_.names_non_ascii = true;
    }

    // What an escape names at i_: "{...}" whole, or else the next `length` characters.
    std::string escape_argument(size_t length, std::string_view escape) {
        if (i_ < p_.size() && p_[i_] == '{') {
            const size_t close = p_.find('}', i_);
            MT_CHECK(close != std::string_view::npos, "an unterminated ", escape, "{ at offset ",
                     i_);
            const size_t open = i_;
            i_ = close + 1;
            return std::string(p_.substr(open + 1, close - open - 1));
        }
        MT_CHECK(i_ + length <= p_.size(), "a pattern ending in ", escape);
        i_ += length;
        return std::string(p_.substr(i_ - length, length));
    }

    // \x.., \u.... and friends, as \x{...}; `digits` hex digits or braces.
    void code_point(size_t skip, size_t digits) {
        i_ += skip;
        const std::string hex = escape_argument(digits, "\\x");
        MT_CHECK(!hex.empty() && hex.size() <= 8 &&
                     hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos,
                 "a bad hexadecimal escape '", hex, "'");
        if (std::stoul(hex, nullptr, 16) >= 0x80) non_ascii("an escaped character outside ASCII");
        out_.pcre2 += "\\x{" + hex + "}";
    }

    void property(bool negated) {
        if (caseless()) refuse("(?i) over a Unicode property");
        const std::string name = escape_argument(1, "\\p");
        bool known = false;
        for (std::string_view c : kCategories) known = known || c == name;
        if (!known)
            refuse(str("the Unicode property \\p{", name, "} (only general categories are)"));
        out_.pcre2 += str(negated ? "\\P{" : "\\p{", name, "}");
    }

    void escape() {
        MT_CHECK(i_ + 1 < p_.size(), "a pattern ending in '\\'");
        const char c = p_[i_ + 1];
        switch (c) {
            case 's':
            case 'S':
                out_.pcre2 += c == 's' ? "\\p{White_Space}" : "\\P{White_Space}";
                i_ += 2;
                return;
            case 'd':
            case 'D':
                out_.pcre2 += c == 'd' ? "\\p{Nd}" : "\\P{Nd}";
                i_ += 2;
                return;
            case 'p':
            case 'P':
                i_ += 2;
                property(c == 'P');
                return;
            case 'n':
            case 'r':
            case 't':
            case 'f':
                out_.pcre2.append(p_, i_, 2);
                i_ += 2;
                return;
            case 'v':
                out_.pcre2 += "\\x0B";
                i_ += 2;
                return;
            case 'x':
                code_point(2, 2);
                return;
            case 'u':
                code_point(2, 4);
                return;
            case 'U':
                code_point(2, 8);
                return;
            default:
                break;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            refuse(str("the escape \\", c));
        if (uint8_t(c) >= 0x80) refuse("an escaped character outside ASCII");
        out_.pcre2.append(p_, i_, 2);  // an escaped ASCII symbol stands for itself
        i_ += 2;
    }

    void group() {
        const bool outer = caseless();
        if (!at("(?")) {
            out_.pcre2 += '(';
            ++i_;
            caseless_.push_back(outer);
            return;
        }
        for (std::string_view kind : {"(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>"}) {
            if (at(kind)) {
                out_.pcre2 += kind;
                i_ += kind.size();
                caseless_.push_back(outer);
                return;
            }
        }
        if (at("(?P<") ||
            (at("(?<") && i_ + 3 < p_.size() && p_[i_ + 3] != '=' && p_[i_ + 3] != '!')) {
            const size_t close = p_.find('>', i_);
            MT_CHECK(close != std::string_view::npos, "an unterminated group name");
            out_.pcre2.append(p_, i_, close + 1 - i_);
            i_ = close + 1;
            caseless_.push_back(outer);
            return;
        }
        // Flags: (?i), (?-i), (?i:...), (?-i:...).
        size_t j = i_ + 2;
        bool on = true, value = outer;
        for (; j < p_.size() && p_[j] != ')' && p_[j] != ':'; ++j) {
            if (p_[j] == '-') {
                on = false;
            } else if (p_[j] == 'i') {
                value = on;
            } else {
                refuse(str("the flag (?", p_[j], ")"));
            }
        }
        MT_CHECK(j < p_.size(), "an unterminated group at offset ", i_);
        out_.pcre2.append(p_, i_, j + 1 - i_);
        if (p_[j] == ':')
            caseless_.push_back(value);
        else
            caseless_.back() = value;  // to the end of the enclosing group
        i_ = j + 1;
    }

    std::string_view p_;
    size_t i_ = 0;
    bool in_class_ = false, class_first_ = false;
    std::vector<bool> caseless_;  // per open group: (?i) in force
    TranslatedPattern out_;
};

}  // namespace

TranslatedPattern translate_pattern(std::string_view pattern) {
    return Translator(pattern).run();
}

}  // namespace mt::text::detail
