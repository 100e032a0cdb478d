#include "gpt2bpe_tokenizer.h"

#include <memory>
#include <unordered_map>

#include "mt/error.h"
#include "mt/text/byte_level.h"
#include "mt/text/utf8.h"
#include "mt/text/word_cache.h"
#include "pretokenizer.h"

namespace mt::plugins::gpt2bpe {

using text::append_replacing_invalid;
using text::WordCache;

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
}  // namespace

Gpt2BpeTokenizer::Gpt2BpeTokenizer(const TokenizerOptions& options)
    : Gpt2BpeTokenizer(read_vocab_json(options.vocab_file), read_merges_txt(options.merge_file),
                       options.vocab_file) {
    identity_ =
        TokenizerIdentity{"_GPT2BPETokenizer", {options.vocab_file, options.merge_file}, {}};
}

TokenizerIdentity Gpt2BpeTokenizer::dataset_identity() const {
    return identity_ ? *identity_ : Tokenizer::dataset_identity();
}

Gpt2BpeTokenizer::Gpt2BpeTokenizer(const std::vector<VocabEntry>& vocab,
                                   const std::vector<MergeRule>& merges, const std::string& source)
    : model_(vocab, merges),
      classes_(UnicodeClasses::get()),
      known_(vocab.size()),
      serial_(WordCache::new_owner()) {
    // json.load keeps a repeated key at its first position with its last id; the decoder
    // {id: token} is then built in that order, so for a repeated id the later key wins.
    std::unordered_map<std::string_view, size_t> index;
    std::vector<std::pair<std::string_view, int32_t>> encoder;
    for (const VocabEntry& e : vocab) {
        auto [it, inserted] = index.try_emplace(e.token, encoder.size());
        if (inserted)
            encoder.emplace_back(e.token, e.id);
        else
            encoder[it->second].second = e.id;
    }
    vocab_size_ = int64_t(encoder.size());
    auto eod = index.find(kEndOfText);
    MT_CHECK(eod != index.end(), source, ": the vocab has no '", kEndOfText,
             "' token, which GPT2BPETokenizer uses as its end-of-document id");
    special_ids_.eod = encoder[eod->second].second;

    int32_t max_id = -1;
    for (const auto& [token, id] : encoder) max_id = std::max(max_id, id);
    MT_CHECK(int64_t(max_id) < 4 * vocab_size_ + 1024, source, ": token ids go up to ", max_id,
             " for only ", vocab_size_, " tokens; ids this sparse are not supported");
    std::vector<std::string_view> decoder(size_t(max_id + 1));
    std::vector<bool> present(decoder.size(), false);
    for (const auto& [token, id] : encoder) {
        decoder[size_t(id)] = token;
        present[size_t(id)] = true;
    }
    token_at_.reserve(decoder.size() + 1);
    token_state_.assign(decoder.size(), kAbsent);
    for (size_t id = 0; id < decoder.size(); ++id) {
        token_at_.push_back(uint32_t(token_bytes_.size()));
        if (!present[id]) continue;
        const std::string_view token = decoder[id];
        const auto* p = reinterpret_cast<const uint8_t*>(token.data());
        const uint8_t* end = p + token.size();
        const size_t start = token_bytes_.size();
        token_state_[id] = kBytes;
        while (p < end) {
            uint32_t cp = 0;
            const size_t len = text::decode_utf8(p, end, cp);
            const int byte = len == 0 ? -1 : text::kByteLevel.byte_of(cp);
            if (byte < 0) {
                token_state_[id] = kNotBytes;
                token_bytes_.resize(start);
                break;
            }
            token_bytes_ += char(byte);
            p += len;
        }
    }
    token_at_.push_back(uint32_t(token_bytes_.size()));
    for (int b = 0; b < 256; ++b) byte_id_[b] = model_.symbol_id(uint32_t(b));

    std::vector<int32_t> ids;
    for (size_t id = 0; id < token_state_.size(); ++id) {
        const size_t n = token_at_[id + 1] - token_at_[id];
        if (token_state_[id] != kBytes || n < 2 || n > WordCache::kMaxKey) continue;
        const auto* bytes = reinterpret_cast<const uint8_t*>(token_bytes_.data() + token_at_[id]);
        ids.clear();
        model_.encode_piece(bytes, n, ids);
        if (ids.size() == 1 && ids[0] == int32_t(id))
            known_.insert(bytes, n, WordCache::hash_piece(bytes, n), ids.data(), 1);
    }
}

void Gpt2BpeTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    const size_t start = out.size();
    try {
        WordCache& cache = WordCache::for_thread(serial_);
        PieceScanner scanner(text, classes_);
        const uint8_t* first;
        const uint8_t* last;
        while (scanner.next(first, last)) {
            const size_t n = size_t(last - first);
            if (n == 1) {
                out.push_back(byte_id_[*first]);
                continue;
            }
            if (n > WordCache::kMaxKey) {
                model_.encode_piece(first, n, out);
                continue;
            }
            cache.append_ids(&known_, first, n, out, [&](std::vector<int32_t>& ids) {
                model_.encode_piece(first, n, ids);
            });
        }
    } catch (...) {
        out.resize(start);
        throw;
    }
}

void Gpt2BpeTokenizer::append_token_bytes(int32_t id, std::string& out) const {
    const bool known =
        id >= 0 && size_t(id) < token_state_.size() && token_state_[size_t(id)] != kAbsent;
    MT_CHECK(known, "GPT2BPETokenizer: cannot decode id ", id, ": not in the vocab");
    MT_CHECK(token_state_[size_t(id)] == kBytes, "GPT2BPETokenizer: cannot decode id ", id,
             ": its token is not made of byte-level characters");
    out.append(token_bytes_, token_at_[size_t(id)],
               token_at_[size_t(id) + 1] - token_at_[size_t(id)]);
}

std::string Gpt2BpeTokenizer::decode(std::span<const int32_t> ids) const {
    std::string bytes;
    for (const int32_t id : ids) append_token_bytes(id, bytes);
    std::string text;
    text.reserve(bytes.size());
    append_replacing_invalid(text, bytes);
    return text;
}

}  // namespace mt::plugins::gpt2bpe
