#include "bert_wordpiece_tokenizer.h"

#include <array>
#include <utility>

#include "mt/error.h"

namespace mt::plugins::wordpiece {
namespace {

constexpr std::string_view kLowerCaseName = "BertWordPieceLowerCase";
constexpr std::string_view kCaseName = "BertWordPieceCase";

int32_t required_id(const BertVocab& vocab, std::string_view token) {
    const int32_t id = vocab.id(token);
    MT_CHECK(id >= 0, "vocab file '", vocab.path(), "' has no ", token,
             " token (a BERT vocabulary needs [UNK], [CLS], [SEP], [PAD] and [MASK])");
    return id;
}

// Python's str.replace(from, to): every non-overlapping occurrence, scanning left to right.
std::string replace_all(const std::string& text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(text, pos, hit - pos);
        out.append(to);
    }
    out.append(text, pos, std::string::npos);
    return out;
}

}  // namespace

BertVocab BertWordPieceTokenizer::build_vocab(const TokenizerOptions& options, bool lower_case) {
    MT_CHECK(!options.vocab_file.empty(), lower_case ? kLowerCaseName : kCaseName,
             " needs a vocab file (--vocab-file)");
    BertVocab vocab = BertVocab::load(options.vocab_file);
    for (std::string_view token : {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"})
        required_id(vocab, token);
    // Megatron appends [BOS] and [EOS] (unless present) and then the T5 sentinels; the word
    // piece vocabulary is the same dict, so they join it too.
    vocab.add_token("[BOS]");
    vocab.add_token("[EOS]");
    for (int64_t i = 0; i < options.vocab_extra_ids; ++i)
        vocab.add_token("<extra_id_" + std::to_string(i) + ">");
    return vocab;
}

SpecialIds BertWordPieceTokenizer::special_ids_of(const BertVocab& vocab) {
    SpecialIds ids;
    ids.cls = required_id(vocab, "[CLS]");
    ids.sep = required_id(vocab, "[SEP]");
    ids.pad = required_id(vocab, "[PAD]");
    ids.mask = required_id(vocab, "[MASK]");
    ids.bos = required_id(vocab, "[BOS]");
    ids.eos = required_id(vocab, "[EOS]");
    ids.eod = ids.eos;
    return ids;
}

BertWordPieceTokenizer::BertWordPieceTokenizer(const TokenizerOptions& options, bool lower_case)
    : basic_(lower_case),
      vocab_(build_vocab(options, lower_case)),
      special_(special_ids_of(vocab_)),
      model_(vocab_.table(), required_id(vocab_, "[UNK]")),
      identity_{"_BertWordPieceTokenizer",
                {options.vocab_file},
                {{"lower_case", lower_case ? "True" : "False"},
                 {"vocab_extra_ids", std::to_string(options.vocab_extra_ids)}}} {}

std::vector<std::string> BertWordPieceTokenizer::vocabulary() const {
    std::vector<std::string> pieces(size_t(vocab_.size()));
    for (int64_t id = 0; id < vocab_.size(); ++id)
        if (const std::string* token = vocab_.token(id)) pieces[size_t(id)] = *token;
    return pieces;
}

std::string_view BertWordPieceTokenizer::name() const {
    return basic_.lower_case() ? kLowerCaseName : kCaseName;
}

void BertWordPieceTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
    BasicTokenizer::Scratch scratch;
    std::vector<uint32_t> bounds;
    basic_.tokenize(text, scratch,
                    [&](std::string_view word) { model_.encode_word(word, out, bounds); });
}

std::string BertWordPieceTokenizer::decode(std::span<const int32_t> ids) const {
    std::string joined;
    for (size_t k = 0; k < ids.size(); ++k) {
        const std::string* token = vocab_.token(ids[k]);
        MT_CHECK(token, name(), ": id ", ids[k], " (position ", k,
                 ") is not in the vocabulary of '", vocab_.path(), "'");
        if (k > 0) joined.push_back(' ');
        joined.append(*token);
    }
    std::string text(python_strip(replace_all(joined, " ##", "")));
    // clean_up_tokenization, in Megatron's order.
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kCleanUp{{
        {" .", "."},
        {" ?", "?"},
        {" !", "!"},
        {" ,", ","},
        {" ' ", "'"},
        {" n't", "n't"},
        {" 'm", "'m"},
        {" 's", "'s"},
        {" 've", "'ve"},
        {" 're", "'re"},
    }};
    for (const auto& [from, to] : kCleanUp) text = replace_all(text, from, to);
    return text;
}

}  // namespace mt::plugins::wordpiece
