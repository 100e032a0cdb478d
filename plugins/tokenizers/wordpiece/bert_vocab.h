// BertVocab: a BERT vocab.txt as Megatron-LM reads it (bert_tokenization.load_vocab: one token
// per line, stripped, a repeated token keeps its last line) plus _BertWordPieceTokenizer's
// add_token, which appends [BOS], [EOS] and <extra_id_N> after the file's tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "token_table.h"

namespace mt::plugins::wordpiece {

class BertVocab {
  public:
    // Reads `path`; an mt::Error names the file when it cannot be opened, is empty or is not
    // UTF-8 (and the line, for the latter).
    static BertVocab load(const std::string& path);
    // Builds a vocabulary from the lines of a file's content (what load() does after reading).
    static BertVocab from_text(std::string_view content, const std::string& path);

    // _BertWordPieceTokenizer.add_token: gives `token` the id size() unless it is present.
    void add_token(std::string_view token);

    // The id of `token`, or -1.
    int32_t id(std::string_view token) const { return table_.find(token); }
    // The id of one of BERT's special tokens, or an mt::Error naming the file.
    int32_t special_id(std::string_view token) const;
    // The token of `id`, or nullptr where Megatron's inv_vocab has no entry (KeyError).
    const std::string* token(int64_t id) const {
        if (id < 0 || id >= static_cast<int64_t>(inverse_.size()) || !inverse_[id]) return nullptr;
        return &*inverse_[id];
    }
    // len(vocab): distinct tokens, which is less than the line count when a token repeats.
    int64_t size() const { return static_cast<int64_t>(table_.size()); }
    const TokenTable& table() const { return table_; }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    TokenTable table_;
    std::vector<std::optional<std::string>> inverse_;
};

}  // namespace mt::plugins::wordpiece
