#include "hf_tokenizer.h"

#include <memory>

#include "decoder.h"
#include "mt/error.h"
#include "mt/text/utf8.h"
#include "mt/text/word_cache.h"

namespace mt::plugins::hf_tokenizer {

namespace {

using text::check_utf8;
using text::WordCache;

std::vector<text::AddedTokenMatch> select(const TokenizerSpec& spec, bool normalized) {
    std::vector<text::AddedTokenMatch> out;
    for (const AddedToken& t : spec.added_tokens) {
        if (t.normalized != normalized) continue;
        out.push_back({normalized ? normalize(spec.normalizer, t.content) : t.content, t.id,
                       t.lstrip, t.rstrip});
    }
    return out;
}

bool has_byte_level(const TokenizerSpec& spec) {
    for (const PreTokenizerStep& s : spec.pre_tokenizer)
        if (s.kind == PreTokenizerStep::kByteLevel) return true;
    return false;
}

}  // namespace

HfTokenizer::HfTokenizer(const TokenizerOptions& options)
    : HfTokenizer(read_tokenizer_spec(options.tokenizer_model)) {
    model_path_ = options.tokenizer_model;
}

TokenizerIdentity HfTokenizer::dataset_identity() const {
    if (!model_path_) return Tokenizer::dataset_identity();
    return {"_HuggingFaceTokenizer", {*model_path_}, {}};
}

HfTokenizer::HfTokenizer(const TokenizerSpec& spec)
    : normalizer_(spec.normalizer),
      pre_tokenizer_(spec.pre_tokenizer),
      model_(spec.model, has_byte_level(spec), spec.source),
      raw_tokens_(select(spec, false)),
      normalized_tokens_(select(spec, true)),
      decoder_(spec.decoder),
      prefix_ids_(spec.prefix_ids),
      suffix_ids_(spec.suffix_ids),
      serial_(WordCache::new_owner()) {
    std::string marker = "\xE2\x96\x81";  // ▁, SentencePiece's space
    for (const PreTokenizerStep& s : spec.pre_tokenizer)
        if (s.kind == PreTokenizerStep::kMetaspace) marker = s.replacement;
    if (model_.cuts_before_runs_of(marker)) cut_marker_ = marker;

    vocab_size_ = int64_t(model_.vocab().size());
    for (const AddedToken& t : spec.added_tokens) {
        added_content_.insert_or_assign(t.id, t.content);
        if (!model_.vocab().count(t.content)) ++vocab_size_;
    }
    auto id_of = [&](const std::string& token) -> std::optional<int32_t> {
        for (const AddedToken& t : spec.added_tokens)
            if (t.content == token) return t.id;
        return model_.token_to_id(token);
    };
    if (auto bos = named_token(spec, "bos_token")) special_ids_.bos = id_of(*bos);
    if (auto eos = named_token(spec, "eos_token")) special_ids_.eod = id_of(*eos);
    for (int32_t id : prefix_ids_)
        MT_CHECK(added_content_.count(id) || model_.id_to_token(id), spec.source,
                 ": the post-processor adds id ", id, ", which is not a token");
    for (int32_t id : suffix_ids_)
        MT_CHECK(added_content_.count(id) || model_.id_to_token(id), spec.source,
                 ": the post-processor adds id ", id, ", which is not a token");
}

std::optional<int32_t> HfTokenizer::token_id(std::string_view token) const {
    for (const auto& [id, content] : added_content_)
        if (content == token) return id;
    return model_.token_to_id(std::string(token));
}

void HfTokenizer::encode_piece(std::string_view piece, WordCache& cache,
                               std::vector<int32_t>& out) const {
    if (cut_marker_.empty()) {
        encode_cached(piece, cache, out);
        return;
    }
    const size_t m = cut_marker_.size();
    size_t start = 0;
    for (size_t at = piece.find(cut_marker_, 1); at != std::string_view::npos;
         at = piece.find(cut_marker_, at + m)) {
        if (at - start >= m && piece.compare(at - m, m, cut_marker_) == 0) continue;  // in a run
        encode_cached(piece.substr(start, at - start), cache, out);
        start = at;
    }
    encode_cached(piece.substr(start), cache, out);
}

void HfTokenizer::encode_cached(std::string_view piece, WordCache& cache,
                                std::vector<int32_t>& out) const {
    const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
    if (piece.size() > WordCache::kMaxKey) {
        model_.encode_piece(piece, out);
        return;
    }
    cache.append_ids(nullptr, bytes, piece.size(), out,
                     [&](std::vector<int32_t>& ids) { model_.encode_piece(piece, ids); });
}

void HfTokenizer::encode_plain(std::string_view segment, bool at_start, WordCache& cache,
                               std::vector<int32_t>& out) const {
    std::string normalized;
    if (!normalizer_.empty()) {
        normalized = normalize(normalizer_, segment);
        segment = normalized;
    }
    std::vector<text::AddedTokenSplitter::Segment> parts;
    normalized_tokens_.split(segment, parts);
    std::vector<std::string_view> pieces;
    for (const auto& part : parts) {
        if (part.id >= 0) {
            out.push_back(part.id);
            continue;
        }
        pre_tokenizer_.run(segment.substr(part.begin, part.end - part.begin),
                           at_start && part.begin == 0, pieces);
        for (std::string_view piece : pieces) encode_piece(piece, cache, out);
    }
}

void HfTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    check_utf8(text, "HuggingFaceTokenizer");
    WordCache& cache = WordCache::for_thread(serial_);
    out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
    std::vector<text::AddedTokenSplitter::Segment> segments;
    raw_tokens_.split(text, segments);
    for (const auto& s : segments) {
        if (s.id >= 0)
            out.push_back(s.id);
        else
            encode_plain(text.substr(s.begin, s.end - s.begin), s.begin == 0, cache, out);
    }
    out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (auto it = added_content_.find(id); it != added_content_.end()) {
            tokens.push_back(it->second);
        } else if (const std::string* token = model_.id_to_token(id)) {
            tokens.push_back(*token);
        } else {
            MT_FAIL("HuggingFaceTokenizer: cannot decode id ", id, ": it is not in the vocab (",
                    vocab_size_, " tokens)");
        }
    }
    return decode_tokens(decoder_, std::move(tokens));
}

}  // namespace mt::plugins::hf_tokenizer
