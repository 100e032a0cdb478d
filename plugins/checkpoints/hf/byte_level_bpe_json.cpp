#include "byte_level_bpe_json.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mt/error.h"
#include "mt/io/json_writer.h"
#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"

namespace mt::plugins::hf {

namespace {

std::string byte_characters(std::string_view bytes) {
    std::string out;
    for (const unsigned char b : bytes) text::append_utf8(out, text::kByteLevel.char_of_byte[b]);
    return out;
}

void byte_level(io::JsonWriter& w, bool add_prefix_space, bool trim_offsets, bool use_regex) {
    w.begin_object();
    w.key("type").value("ByteLevel");
    w.key("add_prefix_space").value(add_prefix_space);
    w.key("trim_offsets").value(trim_offsets);
    w.key("use_regex").value(use_regex);
    w.end_object();
}

}  // namespace

std::string byte_level_bpe_tokenizer_json(const ByteLevelBpeModel& model) {
    const int64_t first = int64_t(model.special_tokens.size());
    std::unordered_map<std::string_view, int64_t> rank_of;
    rank_of.reserve(model.ranks.size());
    for (size_t r = 0; r < model.ranks.size(); ++r) rank_of.emplace(model.ranks[r], int64_t(r));

    io::JsonWriter w;
    w.begin_object();
    w.key("version").value("1.0");
    w.key("truncation").null();
    w.key("padding").null();
    w.key("added_tokens").begin_array();
    for (int64_t id = 0; id < first; ++id) {
        w.begin_object();
        w.key("id").value(id);
        w.key("content").value(model.special_tokens[size_t(id)]);
        w.key("single_word").value(false);
        w.key("lstrip").value(false);
        w.key("rstrip").value(false);
        w.key("normalized").value(false);
        w.key("special").value(true);
        w.end_object();
    }
    w.end_array();
    w.key("normalizer").null();
    w.key("pre_tokenizer").begin_object();
    w.key("type").value("Sequence");
    w.key("pretokenizers").begin_array();
    w.begin_object();
    w.key("type").value("Split");
    w.key("pattern").begin_object().key("Regex").value(model.split_pattern).end_object();
    w.key("behavior").value("Isolated");
    w.key("invert").value(false);
    w.end_object();
    byte_level(w, false, true, false);
    w.end_array();
    w.end_object();
    w.key("post_processor");
    byte_level(w, true, false, true);
    w.key("decoder");
    byte_level(w, true, true, true);
    w.key("model").begin_object();
    w.key("type").value("BPE");
    w.key("dropout").null();
    w.key("unk_token").null();
    w.key("continuing_subword_prefix").null();
    w.key("end_of_word_suffix").null();
    w.key("fuse_unk").value(false);
    w.key("byte_fallback").value(false);
    w.key("ignore_merges").value(true);
    // The special tokens' text at their ids (so tokenizers keeps their ids on load), then the
    // ranks, as transformers' MistralConverter lays out Tekken's.
    std::vector<std::string> rank_text;
    rank_text.reserve(model.ranks.size());
    std::unordered_set<std::string_view> rank_texts;
    for (const std::string& token : model.ranks) rank_text.push_back(byte_characters(token));
    for (const std::string& text : rank_text) rank_texts.insert(text);
    w.key("vocab").begin_object();
    for (int64_t id = 0; id < first; ++id) {
        const std::string& special = model.special_tokens[size_t(id)];
        MT_CHECK(!rank_texts.count(special),
                 "not supported yet: a tokenizer.json for the "
                 "special token '",
                 special.substr(0, 100),
                 "', whose text is also a vocabulary token's as GPT-2 byte characters");
        w.key(special).value(id);
    }
    for (size_t r = 0; r < model.ranks.size(); ++r) w.key(rank_text[r]).value(first + int64_t(r));
    w.end_object();
    // extract_vocab_merges_from_model: each token's splits into two tokens, by the parts'
    // ranks, the tokens in rank order.
    w.key("merges").begin_array();
    std::vector<std::pair<int64_t, int64_t>> splits;
    for (const std::string& token : model.ranks) {
        splits.clear();
        for (size_t k = 1; k < token.size(); ++k) {
            const auto left = rank_of.find(std::string_view(token).substr(0, k));
            if (left == rank_of.end()) continue;
            const auto right = rank_of.find(std::string_view(token).substr(k));
            if (right != rank_of.end()) splits.emplace_back(left->second, right->second);
        }
        std::sort(splits.begin(), splits.end());
        for (const auto& [left, right] : splits)
            w.begin_array()
                .value(rank_text[size_t(left)])
                .value(rank_text[size_t(right)])
                .end_array();
    }
    w.end_array();
    w.end_object();
    w.end_object();
    return w.str() + "\n";
}

}  // namespace mt::plugins::hf
