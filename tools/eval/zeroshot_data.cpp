#include "zeroshot_data.h"

#include <algorithm>

#include "detokenizer.h"
#include "mt/error.h"
#include "python_text.h"
#include "task_data.h"

namespace mt::eval {

namespace {

// f() with its mt::Error prefixed by line `index` + 1 of `path`.
template <class F>
auto at_line(const std::string& path, size_t index, F&& f) {
    try {
        return f();
    } catch (const Error& e) {
        MT_FAIL(path, ":", index + 1, ": ", e.what());
    }
}

}  // namespace

WikitextData wikitext103_data(const std::string& path, const Tokenizer& tokenizer) {
    const Detokenizer detokenize = detokenizer_for_path(path);
    std::string text = read_utf8_file(path);
    WikitextData data;
    const std::string_view stripped = python_strip(text);
    data.num_original_tokens = int64_t(std::count(stripped.begin(), stripped.end(), ' ')) + 1;
    data.tokens = tokenizer.encode(detokenize(std::move(text)));
    return data;
}

std::vector<LambadaExample> lambada_data(const std::string& path, const Tokenizer& tokenizer,
                                         bool strict) {
    const auto texts = read_lambada_texts(path);
    std::vector<LambadaExample> examples;
    examples.reserve(texts.size());
    for (size_t i = 0; i < texts.size(); ++i)
        examples.push_back(
            at_line(path, i, [&] { return lambada_example(texts[i], tokenizer, strict); }));
    return examples;
}

std::vector<ScoredSequence> lambada_sequences(const std::vector<LambadaExample>& examples,
                                              int64_t length, int32_t pad_id,
                                              const std::string& path) {
    std::vector<ScoredSequence> sequences;
    sequences.reserve(examples.size());
    for (size_t i = 0; i < examples.size(); ++i)
        sequences.push_back(
            at_line(path, i, [&] { return lambada_sequence(examples[i], length, pad_id); }));
    return sequences;
}

}  // namespace mt::eval
