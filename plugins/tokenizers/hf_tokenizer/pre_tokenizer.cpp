#include "pre_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <utility>

#include "mt/error.h"
#include "mt/text/replace_all.h"

namespace mt::plugins::hf_tokenizer {

namespace {

// The regex of tokenizers' ByteLevel pre-tokenizer (GPT-2's).
constexpr std::string_view kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The pieces of tokenizers' NormalizedString::split: the matches of `regex` (or else of
// `literal`) and the text between them (swapped by invert), kept, dropped or joined as
// `behavior` says.
void split(const text::RegexSplitter* regex, std::string_view literal, SplitBehavior behavior,
           bool invert, std::string_view piece, std::vector<std::string_view>& out) {
    thread_local std::vector<text::RegexSplitter::Match> matches;
    matches.clear();
    if (regex) {
        regex->find_all(piece, matches);
    } else {
        for (size_t at = piece.find(literal); at != std::string_view::npos;
             at = piece.find(literal, at + literal.size()))
            matches.push_back({at, at + literal.size()});
    }
    struct Segment {
        size_t begin, end;
        bool match;
    };
    thread_local std::vector<Segment> segments;
    segments.clear();
    size_t done = 0;
    for (const auto& m : matches) {
        if (done < m.begin) segments.push_back({done, m.begin, invert});
        segments.push_back({m.begin, m.end, !invert});
        done = m.end;
    }
    if (done < piece.size()) segments.push_back({done, piece.size(), invert});

    thread_local std::vector<std::pair<size_t, size_t>> kept;
    kept.clear();
    if (behavior == SplitBehavior::kIsolated || behavior == SplitBehavior::kRemoved) {
        for (const Segment& s : segments)
            if (!s.match || behavior == SplitBehavior::kIsolated) kept.emplace_back(s.begin, s.end);
    } else {
        // Contiguous joins a segment to the one before when both match or both do not;
        // MergedWithPrevious a match to the text before it, MergedWithNext (walking backwards)
        // to the text after it.
        const bool backwards = behavior == SplitBehavior::kMergedWithNext;
        bool previous_match = false;
        for (size_t k = 0; k < segments.size(); ++k) {
            const Segment& s = segments[backwards ? segments.size() - 1 - k : k];
            const bool join = behavior == SplitBehavior::kContiguous ? s.match == previous_match
                                                                     : s.match && !previous_match;
            if (join && !kept.empty())
                (backwards ? kept.back().first : kept.back().second) = backwards ? s.begin : s.end;
            else
                kept.emplace_back(s.begin, s.end);
            previous_match = s.match;
        }
        if (backwards) std::reverse(kept.begin(), kept.end());
    }
    for (const auto& [begin, end] : kept)
        if (end > begin) out.push_back(piece.substr(begin, end - begin));
}

}  // namespace

// The Unicode normal form of `s` (ICU's, as the unicode-normalization crate tokenizers uses).
void unicode_normal_form(std::string& s, NormalizerStep::Kind kind) {
    UErrorCode error = U_ZERO_ERROR;
    const icu::Normalizer2* form =
        kind == NormalizerStep::kNfc    ? icu::Normalizer2::getNFCInstance(error)
        : kind == NormalizerStep::kNfd  ? icu::Normalizer2::getNFDInstance(error)
        : kind == NormalizerStep::kNfkc ? icu::Normalizer2::getNFKCInstance(error)
                                        : icu::Normalizer2::getNFKDInstance(error);
    MT_CHECK(U_SUCCESS(error),
             "HuggingFaceTokenizer: ICU has no Unicode normalizer: ", u_errorName(error));
    const icu::UnicodeString text = icu::UnicodeString::fromUTF8(s);
    if (form->isNormalized(text, error) && U_SUCCESS(error)) return;
    error = U_ZERO_ERROR;
    const icu::UnicodeString normal = form->normalize(text, error);
    MT_CHECK(U_SUCCESS(error),
             "HuggingFaceTokenizer: Unicode normalization failed: ", u_errorName(error));
    s.clear();
    normal.toUTF8String(s);
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text) {
    std::string s(text);
    for (const NormalizerStep& step : steps) {
        switch (step.kind) {
            case NormalizerStep::kPrepend:
                if (!s.empty()) s.insert(0, step.content);
                break;
            case NormalizerStep::kReplace:
                text::replace_all(s, step.pattern, step.content);
                break;
            default:
                unicode_normal_form(s, step.kind);
        }
    }
    return s;
}

PreTokenizer::PreTokenizer(std::vector<PreTokenizerStep> steps)
    : steps_(std::move(steps)), byte_level_regex_(kByteLevelPattern) {
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
    switch (step.kind) {
        case PreTokenizerStep::kMetaspace: {
            std::string text(piece);
            text::replace_all(text, " ", step.replacement);
            const bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                                 (step.prepend_scheme == PrependScheme::kFirst && first);
            if (prepend && !text.empty() &&
                text.compare(0, step.replacement.size(), step.replacement) != 0)
                text.insert(0, step.replacement);
            const std::string_view kept = keep(std::move(text));
            if (step.split)
                split(nullptr, step.replacement, SplitBehavior::kMergedWithNext, false, kept, out);
            else
                out.push_back(kept);
            return;
        }
        case PreTokenizerStep::kByteLevel:
            if (step.add_prefix_space && !piece.empty() && piece[0] != ' ')
                piece = keep(" " + std::string(piece));
            if (step.use_regex)
                split(&byte_level_regex_, {}, SplitBehavior::kIsolated, false, piece, out);
            else if (!piece.empty())
                out.push_back(piece);
            return;
        case PreTokenizerStep::kSplit:
            split(step.regex ? &*step.regex : nullptr, step.literal, step.behavior, step.invert,
                  piece, out);
            return;
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
