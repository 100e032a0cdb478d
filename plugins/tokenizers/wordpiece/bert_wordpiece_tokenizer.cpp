#include "bert_wordpiece_tokenizer.h"

#include "clean_up.h"
#include "mt/error.h"
#include "mt/text/replace_all.h"

namespace mt::plugins::wordpiece {
namespace {

constexpr std::string_view kLowerCaseName = "BertWordPieceLowerCase";
constexpr std::string_view kCaseName = "BertWordPieceCase";

}  // namespace

BertVocab BertWordPieceTokenizer::build_vocab(const TokenizerOptions& options, bool lower_case) {
    MT_CHECK(!options.vocab_file.empty(), lower_case ? kLowerCaseName : kCaseName,
             " needs a vocab file (--vocab-file)");
    BertVocab vocab = BertVocab::load(options.vocab_file);
    for (std::string_view token : {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"})
        vocab.special_id(token);
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
    ids.cls = vocab.special_id("[CLS]");
    ids.sep = vocab.special_id("[SEP]");
    ids.pad = vocab.special_id("[PAD]");
    ids.mask = vocab.special_id("[MASK]");
    ids.bos = vocab.special_id("[BOS]");
    ids.eos = vocab.special_id("[EOS]");
    ids.eod = ids.eos;
    return ids;
}

BertWordPieceTokenizer::BertWordPieceTokenizer(const TokenizerOptions& options, bool lower_case)
    : basic_(lower_case),
      vocab_(build_vocab(options, lower_case)),
      special_(special_ids_of(vocab_)),
      model_(vocab_.table(), vocab_.special_id("[UNK]")),
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
    text::replace_all(joined, " ##", "");
    std::string text(python_strip(joined));
    clean_up_tokenization(text, CleanUp::kTransformers);
    return text;
}

}  // namespace mt::plugins::wordpiece
