#include "bert_vocab.h"

#include <fstream>
#include <sstream>

#include "char_class.h"
#include "mt/error.h"

namespace mt::plugins::wordpiece {
BertVocab BertVocab::load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    MT_CHECK(in, "cannot open vocab file '", path, "'");
    std::ostringstream content;
    content << in.rdbuf();
    MT_CHECK(!in.bad(), "cannot read vocab file '", path, "'");
    return from_text(content.str(), path);
}

BertVocab BertVocab::from_text(std::string_view content, const std::string& path) {
    BertVocab vocab;
    vocab.path_ = path;
    // Python's text mode reads "\n", "\r\n" and "\r" as line ends; every line, the empty one
    // included, is a token with the next index.
    std::vector<std::string_view> lines;
    size_t begin = 0;
    while (begin < content.size()) {
        size_t end = content.find_first_of("\r\n", begin);
        if (end == std::string_view::npos) {
            lines.push_back(content.substr(begin));
            break;
        }
        lines.push_back(content.substr(begin, end - begin));
        begin =
            end +
            (content[end] == '\r' && end + 1 < content.size() && content[end + 1] == '\n' ? 2 : 1);
    }
    MT_CHECK(!lines.empty(), "vocab file '", path, "' is empty");
    MT_CHECK(lines.size() < static_cast<size_t>(INT32_MAX), "vocab file '", path,
             "' has too many lines");

    for (size_t index = 0; index < lines.size(); ++index) {
        const std::string_view line = lines[index];
        for (size_t i = 0; i < line.size();)
            MT_CHECK(next_code_point(line, i) != kInvalidCodePoint, "vocab file '", path, "' line ",
                     index + 1, " is not valid UTF-8");
        vocab.table_.insert(python_strip(line), static_cast<int32_t>(index));
    }
    // inv_vocab = {v: k for k, v in vocab.items()}: an id whose token repeats later has no entry.
    vocab.inverse_.resize(lines.size());
    vocab.table_.for_each(
        [&](std::string_view token, int32_t id) { vocab.inverse_[id] = std::string(token); });
    return vocab;
}

void BertVocab::add_token(std::string_view token) {
    if (table_.find(token) >= 0) return;
    // Megatron uses len(vocab) as the new id, which can land on an id already in inv_vocab
    // when the file repeats a token; that entry is then replaced, as here.
    const int64_t new_id = size();
    MT_CHECK(new_id < INT32_MAX, "vocabulary of '", path_, "' is too large");
    if (static_cast<size_t>(new_id) >= inverse_.size()) inverse_.resize(new_id + 1);
    inverse_[new_id] = std::string(token);
    table_.insert(token, static_cast<int32_t>(new_id));
}

int32_t BertVocab::special_id(std::string_view token) const {
    const int32_t found = id(token);
    MT_CHECK(found >= 0, "vocab file '", path_, "' has no ", token,
             " token (a BERT vocabulary needs [UNK], [CLS], [SEP], [PAD] and [MASK])");
    return found;
}

}  // namespace mt::plugins::wordpiece
