#include "mt/text/added_special_tokens.h"

#include "mt/error.h"

namespace mt::text {
namespace {

std::vector<AddedTokenMatch> matches(const std::vector<std::string>& tokens,
                                     const std::function<int32_t(std::string_view)>& vocab_id,
                                     int64_t vocab_size) {
    std::vector<AddedTokenMatch> out;
    int64_t next = vocab_size;
    for (const std::string& token : tokens) {
        bool seen = false;
        for (const AddedTokenMatch& m : out) seen = seen || m.content == token;
        if (seen || token.empty()) continue;
        int32_t id = vocab_id(token);
        if (id < 0) id = int32_t(next++);
        out.push_back({token, id});
    }
    return out;
}

}  // namespace

AddedSpecialTokens::AddedSpecialTokens(const std::vector<std::string>& tokens,
                                       const std::function<int32_t(std::string_view)>& vocab_id,
                                       int64_t vocab_size)
    : AddedSpecialTokens(matches(tokens, vocab_id, vocab_size), vocab_size) {}

AddedSpecialTokens::AddedSpecialTokens(const std::vector<AddedTokenMatch>& tokens,
                                       int64_t vocab_size)
    : vocab_size_(vocab_size), size_(vocab_size), splitter_(tokens) {
    for (const AddedTokenMatch& m : tokens) {
        content_.emplace(m.id, m.content);
        if (m.id >= size_) size_ = int64_t(m.id) + 1;
    }
}

int32_t AddedSpecialTokens::id(std::string_view token) const {
    for (const auto& [id, content] : content_)
        if (content == token) return id;
    MT_FAIL("'", token.substr(0, 100), "' is not a special token here");
}

const std::string* AddedSpecialTokens::added(int32_t id) const {
    if (id < vocab_size_) return nullptr;
    const auto it = content_.find(id);
    return it == content_.end() ? nullptr : &it->second;
}

void AddedSpecialTokens::encode(
    std::string_view text, std::vector<int32_t>& out,
    const std::function<void(std::string_view, std::vector<int32_t>&)>& encode_plain) const {
    thread_local std::vector<AddedTokenSplitter::Segment> segments;
    splitter_.split(text, segments);
    for (const AddedTokenSplitter::Segment& s : segments) {
        if (s.id >= 0)
            out.push_back(s.id);
        else if (s.end > s.begin)
            encode_plain(text.substr(s.begin, s.end - s.begin), out);
    }
}

}  // namespace mt::text
