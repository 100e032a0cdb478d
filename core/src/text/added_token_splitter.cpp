#include "mt/text/added_token_splitter.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "mt/text/utf8.h"

namespace mt::text {

namespace {

// Rust's char::is_whitespace (Unicode White_Space), which lstrip/rstrip use.
size_t whitespace_len(const uint8_t* p, const uint8_t* end) {
    uint32_t cp = 0;
    const size_t len = decode_utf8(p, end, cp);
    return len > 0 && u_isUWhiteSpace(UChar32(cp)) ? len : 0;
}

// Start of the white space that ends text[0, at).
size_t whitespace_start_before(std::string_view text, size_t at) {
    const auto* base = reinterpret_cast<const uint8_t*>(text.data());
    while (at > 0) {
        size_t start = at - 1;
        while (start > 0 && (base[start] & 0xC0) == 0x80) --start;  // back to a lead byte
        if (whitespace_len(base + start, base + at) != at - start) break;
        at = start;
    }
    return at;
}

}  // namespace

AddedTokenSplitter::AddedTokenSplitter(const std::vector<AddedTokenMatch>& tokens) {
    for (const AddedTokenMatch& t : tokens)
        if (!t.content.empty()) tokens_.push_back(t);
    for (uint32_t i = 0; i < tokens_.size(); ++i) {
        by_first_byte_[uint8_t(tokens_[i].content[0])].push_back(i);
        starts_[uint8_t(tokens_[i].content[0])] = true;
    }
    for (auto& bucket : by_first_byte_)
        std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
            return tokens_[a].content.size() > tokens_[b].content.size();
        });
}

void AddedTokenSplitter::split(std::string_view text, std::vector<Segment>& out) const {
    out.clear();
    if (text.empty() || tokens_.empty()) {
        out.push_back({0, text.size(), -1});
        return;
    }
    const auto* base = reinterpret_cast<const uint8_t*>(text.data());
    const auto* end = base + text.size();
    size_t done = 0;  // end of the last match (with what it stripped)
    size_t pos = 0;
    while (pos < text.size()) {
        if (!starts_[base[pos]]) {
            ++pos;
            continue;
        }
        const Entry* hit = nullptr;
        for (uint32_t i : by_first_byte_[base[pos]]) {
            const Entry& e = tokens_[i];
            if (text.compare(pos, e.content.size(), e.content) == 0) {
                hit = &e;
                break;
            }
        }
        if (hit == nullptr) {
            ++pos;
            continue;
        }
        size_t start = pos;
        size_t stop = pos + hit->content.size();
        // White space an earlier match already took stays with it.
        if (hit->lstrip) start = std::max(whitespace_start_before(text, start), done);
        if (hit->rstrip) {
            while (stop < text.size()) {
                const size_t n = whitespace_len(base + stop, end);
                if (n == 0) break;
                stop += n;
            }
        }
        if (done < start) out.push_back({done, start, -1});
        out.push_back({start, stop, hit->id});
        done = stop;
        pos = pos + hit->content.size();  // the match iterator resumes after the token itself
        pos = std::max(pos, done);
    }
    if (done < text.size()) out.push_back({done, text.size(), -1});
}

}  // namespace mt::text
