#include "wordpiece_model.h"

namespace mt::plugins::wordpiece {

WordPieceModel::WordPieceModel(const TokenTable& vocab, int32_t unk_id, size_t max_chars)
    : whole_(vocab), unk_id_(unk_id), max_chars_(max_chars) {
    // Looking "##" + piece up in the vocabulary is looking piece up among the "##" tokens.
    vocab.for_each([&](std::string_view token, int32_t id) {
        if (token.size() >= 2 && token[0] == '#' && token[1] == '#')
            continuation_.insert(token.substr(2), id);
    });
}

template <class Offset>
void WordPieceModel::greedy(std::string_view word, size_t chars, Offset offset,
                            std::vector<int32_t>& out) const {
    const size_t mark = out.size();
    size_t start = 0;
    while (start < chars) {
        const TokenTable& table = start == 0 ? whole_ : continuation_;
        const size_t from = offset(start);
        // Substrings longer than every token cannot match: start below them.
        size_t end = chars;
        while (end > start && offset(end) - from > table.max_key_bytes()) --end;
        int32_t id = -1;
        for (; end > start; --end) {
            id = table.find(word.substr(from, offset(end) - from));
            if (id >= 0) break;
        }
        if (id < 0) {
            out.resize(mark);
            out.push_back(unk_id_);
            return;
        }
        out.push_back(id);
        start = end;
    }
}

void WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out,
                                 std::vector<uint32_t>& bounds) const {
    bool ascii = true;
    for (char c : word) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (ascii) {
        if (word.size() > max_chars_) {
            out.push_back(unk_id_);
            return;
        }
        greedy(
            word, word.size(), [](size_t k) { return k; }, out);
        return;
    }
    // Python slices code points: keep each one's byte offset.
    bounds.clear();
    for (size_t i = 0; i < word.size();) {
        bounds.push_back(static_cast<uint32_t>(i));
        const auto lead = static_cast<unsigned char>(word[i]);
        i += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    }
    const size_t chars = bounds.size();
    if (chars > max_chars_) {
        out.push_back(unk_id_);
        return;
    }
    bounds.push_back(static_cast<uint32_t>(word.size()));
    greedy(
        word, chars, [&](size_t k) { return static_cast<size_t>(bounds[k]); }, out);
}

}  // namespace mt::plugins::wordpiece
