#include "core_bert_wordpiece_tokenizer.h"

#include "clean_up.h"
#include "mt/error.h"

namespace mt::plugins::wordpiece {
namespace {

constexpr std::string_view kLowerCaseName = "BertWordPieceLowerCase";
constexpr std::string_view kCaseName = "BertWordPieceCase";
// transformers' BertTokenizer's limit (Megatron's own WordpieceTokenizer allows 200).
constexpr size_t kMaxCharsPerWord = 100;

// core_v0.19's additional_special_tokens: BertWordPieceCase's T5 sentinels, or the flag's.
std::vector<std::string> additional_tokens(const TokenizerOptions& options, bool lower_case) {
    if (!lower_case) {
        std::vector<std::string> sentinels;
        for (int i = 0; i < 100; ++i) sentinels.push_back("<extra_id_" + std::to_string(i) + ">");
        return sentinels;
    }
    return options.special_tokens.value_or(std::vector<std::string>{});
}

BertVocab load_vocab(const TokenizerOptions& options, bool lower_case) {
    MT_CHECK(!options.vocab_file.empty(), lower_case ? kLowerCaseName : kCaseName,
             " needs a vocab file (--vocab-file)");
    BertVocab vocab = BertVocab::load(options.vocab_file);
    for (std::string_view token : {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"})
        vocab.special_id(token);
    return vocab;
}

std::vector<std::string> special_tokens(const std::vector<std::string>& additional) {
    std::vector<std::string> tokens{"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    tokens.insert(tokens.end(), additional.begin(), additional.end());
    return tokens;
}

}  // namespace

CoreBertWordPieceTokenizer::CoreBertWordPieceTokenizer(const TokenizerOptions& options,
                                                       bool lower_case)
    : basic_(lower_case, /*transformers_rules=*/true),
      vocab_(load_vocab(options, lower_case)),
      model_(vocab_.table(), vocab_.special_id("[UNK]"), kMaxCharsPerWord),
      added_(
          special_tokens(additional_tokens(options, lower_case)),
          [this](std::string_view token) { return vocab_.id(token); }, vocab_.size()),
      include_special_tokens_(options.hf_include_special_tokens) {
    // transformers' BERT has no bos or eos: core_v0.19 takes [CLS] and [SEP] for them.
    special_.cls = special_.bos = vocab_.special_id("[CLS]");
    special_.sep = special_.eos = special_.eod = vocab_.special_id("[SEP]");
    special_.pad = vocab_.special_id("[PAD]");
    special_.mask = vocab_.special_id("[MASK]");
    const std::vector<std::string> additional = additional_tokens(options, lower_case);
    identity_ = core_v0_19_identity(options, std::string(name()),
                                    transformers_kwargs(options, additional, false));
    for (const std::string& token : additional) additional_.emplace_back(token, added_.id(token));
}

std::string_view CoreBertWordPieceTokenizer::name() const {
    return basic_.lower_case() ? kLowerCaseName : kCaseName;
}

std::vector<std::string> CoreBertWordPieceTokenizer::vocabulary() const {
    std::vector<std::string> pieces(static_cast<size_t>(vocab_size()));
    for (int64_t id = 0; id < vocab_size(); ++id) {
        if (const std::string* token = vocab_.token(id))
            pieces[size_t(id)] = *token;
        else if (const std::string* added = added_.added(int32_t(id)))
            pieces[size_t(id)] = *added;
    }
    return pieces;
}

void CoreBertWordPieceTokenizer::encode_append(std::string_view text,
                                               std::vector<int32_t>& out) const {
    if (include_special_tokens_) out.push_back(*special_.cls);
    BasicTokenizer::Scratch scratch;
    std::vector<uint32_t> bounds;
    added_.encode(text, out, [&](std::string_view piece, std::vector<int32_t>& ids) {
        basic_.tokenize(piece, scratch,
                        [&](std::string_view word) { model_.encode_word(word, ids, bounds); });
    });
    if (include_special_tokens_) out.push_back(*special_.sep);
}

const std::string& CoreBertWordPieceTokenizer::token_of(int32_t id) const {
    if (const std::string* added = added_.added(id)) return *added;
    const std::string* token = vocab_.token(id);
    MT_CHECK(token, name(), ": id ", id, " is not in the vocabulary of '", vocab_.path(), "'");
    return *token;
}

std::string CoreBertWordPieceTokenizer::decode(std::span<const int32_t> ids) const {
    std::string text, piece;
    bool first = true;
    for (const int32_t id : ids) {
        if (!include_special_tokens_ && added_.is_special(id)) continue;
        const std::string& token = token_of(id);
        if (first)
            piece = token;
        else if (token.starts_with("##"))
            piece = token.substr(2);
        else
            piece = " " + token;
        first = false;
        clean_up_tokenization(piece, CleanUp::kTokenizersWordPiece);
        text += piece;
    }
    return text;
}

}  // namespace mt::plugins::wordpiece
