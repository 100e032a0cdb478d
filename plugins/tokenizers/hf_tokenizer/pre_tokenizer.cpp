#include "pre_tokenizer.h"

#include <utility>

#include "mt/error.h"
#include "pretokenizer.h"
#include "utf8.h"

namespace mt::plugins::hf_tokenizer {

using gpt2bpe::CharClass;
using gpt2bpe::UnicodeClasses;

namespace {

struct Char {
    CharClass cls;
    uint32_t cp;
    uint32_t len;
};

Char char_at(const uint8_t* p, const uint8_t* end, const UnicodeClasses& classes) {
    if (*p < 0x80) return {CharClass(classes.latin1()[*p]), *p, 1};
    uint32_t cp = 0;
    const size_t len = gpt2bpe::decode_utf8(p, end, cp);
    MT_CHECK(len > 0, "HuggingFaceTokenizer: text is not valid UTF-8");
    return {classes.of(cp), cp, uint32_t(len)};
}

const uint8_t* run_end(const uint8_t* p, const uint8_t* end, CharClass cls,
                       const UnicodeClasses& classes) {
    while (p < end) {
        const Char c = char_at(p, end, classes);
        if (c.cls != cls) break;
        p += c.len;
    }
    return p;
}

bool is_newline(uint32_t cp) {
    return cp == '\r' || cp == '\n';
}

}  // namespace

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (s.find(from) == std::string::npos) return;
    std::string out;
    out.reserve(s.size() + to.size());
    size_t at = 0;
    for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) {
        out.append(s, at, hit - at);
        out.append(to);
    }
    out.append(s, at, std::string::npos);
    s = std::move(out);
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text) {
    std::string s(text);
    for (const NormalizerStep& step : steps) {
        if (step.kind == NormalizerStep::kPrepend) {
            if (!s.empty()) s.insert(0, step.content);
        } else {
            replace_all(s, step.pattern, step.content);
        }
    }
    return s;
}

const uint8_t* llama3_piece_end(const uint8_t* p, const uint8_t* end,
                                const UnicodeClasses& classes) {
    using gpt2bpe::kLetter, gpt2bpe::kNumber, gpt2bpe::kOther, gpt2bpe::kSpace;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (*p == '\'' && end - p >= 2) {
        const uint8_t a = uint8_t(p[1] | 0x20);  // ASCII lower case; other bytes never match
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return p + 2;
        if (end - p >= 3) {
            const uint8_t b = uint8_t(p[2] | 0x20);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return p + 3;
        }
    }
    const Char c = char_at(p, end, classes);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c.cls == kLetter) return run_end(p + c.len, end, kLetter, classes);
    if (c.cls != kNumber && !is_newline(c.cp) && p + c.len < end) {
        const Char d = char_at(p + c.len, end, classes);
        if (d.cls == kLetter) return run_end(p + c.len + d.len, end, kLetter, classes);
    }
    // \p{N}{1,3}
    if (c.cls == kNumber) {
        const uint8_t* q = p + c.len;
        for (int k = 0; k < 2 && q < end; ++k) {
            const Char d = char_at(q, end, classes);
            if (d.cls != kNumber) break;
            q += d.len;
        }
        return q;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const uint8_t* q = p;
    if (c.cp == ' ' && p + 1 < end && char_at(p + 1, end, classes).cls == kOther) q = p + 1;
    if (q != p || c.cls == kOther) {
        q = run_end(q, end, kOther, classes);
        while (q < end && is_newline(*q)) ++q;
        return q;
    }
    // c is white space. \s*[\r\n]+ ends after the run's last newline, if it has one.
    const uint8_t* last_newline = nullptr;
    const uint8_t* last_start = p;
    for (q = p; q < end;) {
        const Char d = char_at(q, end, classes);
        if (d.cls != kSpace) break;
        if (is_newline(d.cp)) last_newline = q;
        last_start = q;
        q += d.len;
    }
    if (last_newline) return last_newline + 1;
    // \s+(?!\S) leaves the run's last character to the next piece when non-space follows;
    // a lone space before non-space is \s+.
    if (q == end || last_start == p) return q;
    return last_start;
}

PreTokenizer::PreTokenizer(std::vector<PreTokenizerStep> steps)
    : steps_(std::move(steps)), classes_(UnicodeClasses::get()) {
    for (size_t i = 0; i < steps_.size(); ++i) {
        if (steps_[i].kind != PreTokenizerStep::kByteLevel) continue;
        MT_CHECK(i + 1 == steps_.size(),
                 "HuggingFaceTokenizer: not supported yet: a pre-tokenizer after ByteLevel");
        byte_level_ = true;
    }
}

namespace {
// Text made by steps that change their piece (Metaspace, ByteLevel's prefix space); a deque
// keeps earlier strings in place while later ones are added.
thread_local std::deque<std::string> made_text;

std::string_view keep(std::string text) {
    made_text.push_back(std::move(text));
    return made_text.back();
}
}  // namespace

void PreTokenizer::apply(const PreTokenizerStep& step, std::string_view piece, bool first,
                         std::vector<std::string_view>& out) const {
    auto gpt2_split = [&] {
        gpt2bpe::PieceScanner scanner(piece, classes_);
        const uint8_t *a, *b;
        while (scanner.next(a, b))
            out.emplace_back(reinterpret_cast<const char*>(a), size_t(b - a));
    };
    switch (step.kind) {
        case PreTokenizerStep::kMetaspace: {
            std::string text(piece);
            replace_all(text, " ", step.replacement);
            const bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                                 (step.prepend_scheme == PrependScheme::kFirst && first);
            if (prepend && !text.empty() &&
                text.compare(0, step.replacement.size(), step.replacement) != 0)
                text.insert(0, step.replacement);
            const std::string_view kept = keep(std::move(text));
            if (!step.split) {
                out.push_back(kept);
                return;
            }
            // Split before every replacement (MergedWithNext).
            size_t start = 0;
            for (size_t at = kept.find(step.replacement, 1); at != std::string_view::npos;
                 at = kept.find(step.replacement, at + step.replacement.size())) {
                if (at > start) out.push_back(kept.substr(start, at - start));
                start = at;
            }
            if (start < kept.size()) out.push_back(kept.substr(start));
            return;
        }
        case PreTokenizerStep::kByteLevel:
            if (step.add_prefix_space && !piece.empty() && piece[0] != ' ')
                piece = keep(" " + std::string(piece));
            if (step.use_regex)
                gpt2_split();
            else if (!piece.empty())
                out.push_back(piece);
            return;
        case PreTokenizerStep::kSplitGpt2:
            gpt2_split();
            return;
        case PreTokenizerStep::kSplitLlama3: {
            const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
            const auto* end = p + piece.size();
            while (p < end) {
                const uint8_t* q = llama3_piece_end(p, end, classes_);
                out.emplace_back(reinterpret_cast<const char*>(p), size_t(q - p));
                p = q;
            }
            return;
        }
    }
}

void PreTokenizer::run(std::string_view segment, bool at_start,
                       std::vector<std::string_view>& pieces) const {
    made_text.clear();
    pieces.clear();
    if (segment.empty()) return;
    pieces.push_back(segment);
    thread_local std::vector<std::string_view> next;
    for (const PreTokenizerStep& step : steps_) {
        next.clear();
        for (size_t i = 0; i < pieces.size(); ++i) apply(step, pieces[i], at_start && i == 0, next);
        pieces.swap(next);
    }
}

}  // namespace mt::plugins::hf_tokenizer
