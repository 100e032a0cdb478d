#include "detokenizer.h"

#include <initializer_list>
#include <utility>

#include "mt/error.h"
#include "python_text.h"

namespace mt::eval {

namespace {

// str.replace(from, to): every non-overlapping occurrence, left to right.
void replace_all(std::string& text, std::string_view from, std::string_view to) {
    size_t pos = text.find(from);
    if (pos == std::string::npos) return;
    std::string out;
    out.reserve(text.size());
    size_t done = 0;
    while (pos != std::string::npos) {
        out.append(text, done, pos - done).append(to);
        done = pos + from.size();
        pos = text.find(from, done);
    }
    out.append(text, done);
    text = std::move(out);
}

// re.sub(r"O\s*([^C]*?)\s*C", r"O\1C", text) for single-byte open O and close C: each O with a
// C after it, up to the first such C, loses the whitespace just inside the pair; scanning goes
// on after the C (so with O == C the marks pair up in order).
void tighten_pairs(std::string& text, char open, char close) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const size_t o = text.find(open, i);
        const size_t c = o == std::string::npos ? o : text.find(close, o + 1);
        if (c == std::string::npos) break;
        out.append(text, i, o + 1 - i);
        const std::string_view inside =
            python_strip(std::string_view(text).substr(o + 1, c - o - 1));
        out.append(inside).push_back(close);
        i = c + 1;
    }
    out.append(text, i);
    text = std::move(out);
}

// re.sub(r"/' [0-9]/", r"/'[0-9]/", text): Megatron's rule replaces the match by that literal.
void slash_quote_digit(std::string& text) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    for (size_t p = text.find("/' "); p != std::string::npos; p = text.find("/' ", p + 1)) {
        if (p < i || p + 4 >= text.size() || text[p + 3] < '0' || text[p + 3] > '9' ||
            text[p + 4] != '/')
            continue;
        out.append(text, i, p - i).append("/'[0-9]/");
        i = p + 5;
    }
    out.append(text, i);
    text = std::move(out);
}

struct Rule {
    std::string_view from, to;
};

void apply(std::string& text, std::initializer_list<Rule> rules) {
    for (const auto& r : rules) replace_all(text, r.from, r.to);
}

}  // namespace

std::string ptb_detokenize(std::string text) {
    apply(text, {{" '", "'"},
                 {" \n", "\n"},
                 {"\n ", "\n"},
                 {" n't", "n't"},
                 {" N ", "1 "},
                 {"$ 1", "$1"},
                 {"# 1", "#1"}});
    return text;
}

std::string wikitext_detokenize(std::string text) {
    // contractions
    replace_all(text, "s '", "s'");
    slash_quote_digit(text);
    // number separators, punctuation
    apply(text, {{" @-@ ", "-"},
                 {" @,@ ", ","},
                 {" @.@ ", "."},
                 {" : ", ": "},
                 {" ; ", "; "},
                 {" . ", ". "},
                 {" ! ", "! "},
                 {" ? ", "? "},
                 {" , ", ", "}});
    // brackets and quotes
    for (const auto& [open, close] : {std::pair{'(', ')'}, std::pair{'[', ']'}, std::pair{'{', '}'},
                                      std::pair{'"', '"'}, std::pair{'\'', '\''}})
        tighten_pairs(text, open, close);
    // miscellaneous
    apply(text, {{"= = = =", "===="},
                 {"= = =", "==="},
                 {"= =", "=="},
                 {" \u00b0 ", "\u00b0"},
                 {" \n", "\n"},
                 {"\n ", "\n"},
                 {" N ", " 1 "},
                 {" 's", "'s"}});
    return text;
}

Detokenizer detokenizer_for_path(const std::string& path) {
    if (path.find("ptb") != std::string::npos) return ptb_detokenize;
    if (path.find("wiki") != std::string::npos) return wikitext_detokenize;
    if (path.find("lambada") != std::string::npos) return [](std::string text) { return text; };
    MT_FAIL("--valid-data ", path,
            ": no detokenizer for this file: as in Megatron, the path must contain 'ptb', "
            "'wiki' or 'lambada' to choose one");
}

}  // namespace mt::eval
