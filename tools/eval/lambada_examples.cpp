#include "lambada_examples.h"

#include <string>

#include "mt/error.h"
#include "python_text.h"

namespace mt::eval {

LambadaExample lambada_example(std::string_view text, const Tokenizer& tokenizer, bool strict) {
    LambadaExample e;
    if (!strict) {
        e.context = tokenizer.encode(text);
        MT_CHECK(!e.context.empty(), "the text gives no token");
        e.label.push_back(e.context.back());
        e.context.pop_back();
        return e;
    }
    const auto words = python_split(text);
    MT_CHECK(!words.empty(), "the text has no word");
    const std::string_view last = words.back();
    const size_t start = text.rfind(last);
    e.context = tokenizer.encode(python_strip(text.substr(0, start)));
    e.label = tokenizer.encode(" " + std::string(last));
    return e;
}

ScoredSequence lambada_sequence(const LambadaExample& example, int64_t length, int32_t pad_id) {
    const int64_t n = int64_t(example.context.size() + example.label.size());
    MT_CHECK(n <= length + 1, n, " tokens, more than --seq-length + 1 = ", length + 1);
    ScoredSequence s;
    s.tokens = example.context;
    s.tokens.insert(s.tokens.end(), example.label.begin(), example.label.end());
    s.tokens.resize(size_t(length + 1), pad_id);
    s.mask.assign(size_t(length), 0);
    for (int64_t i = int64_t(example.context.size()); i < n; ++i)
        if (i > 0) s.mask[size_t(i - 1)] = 1;
    return s;
}

}  // namespace mt::eval
