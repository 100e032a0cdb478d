#include "core_hf_tokenizer.h"

#include <utility>

#include "mt/error.h"

namespace mt::plugins::hf_tokenizer {
namespace {

// The folder's tokenizer as core_v0.19 sets it up before its first use.
TokenizerSpec core_spec(const TokenizerOptions& options) {
    TokenizerSpec spec = read_tokenizer_spec(options.tokenizer_model);
    // sep falls back to eos and eos to sep, bos to cls and cls to bos (tokens it names anew
    // are special tokens like the others).
    const auto stand_in = [&spec](const char* missing, const char* present) {
        if (named_token(spec, missing)) return;
        if (auto token = named_token(spec, present)) spec.named_tokens[missing] = *token;
    };
    stand_in("sep_token", "eos_token");
    stand_in("eos_token", "sep_token");
    stand_in("bos_token", "cls_token");
    stand_in("cls_token", "bos_token");
    for (const auto& [name, token] : spec.named_tokens) add_special_token(spec, token);
    if (options.special_tokens)
        for (const std::string& token : *options.special_tokens) add_special_token(spec, token);
    if (!options.hf_include_special_tokens) {  // tokenize(), not tokenizer(text)
        spec.prefix_ids.clear();
        spec.suffix_ids.clear();
    }
    return spec;
}

}  // namespace

CoreHfTokenizer::CoreHfTokenizer(const TokenizerOptions& options)
    : CoreHfTokenizer(options, core_spec(options)) {}

CoreHfTokenizer::CoreHfTokenizer(const TokenizerOptions& options, TokenizerSpec spec)
    : tokenizer_(spec), include_special_tokens_(options.hf_include_special_tokens) {
    for (const AddedToken& t : spec.added_tokens)
        if (t.special) special_.insert(t.id);
    const auto id_of = [&spec](const char* name) -> std::optional<int32_t> {
        const auto token = named_token(spec, name);
        return token ? token_id(spec, *token) : std::nullopt;
    };
    special_ids_.bos = id_of("bos_token");
    special_ids_.eos = special_ids_.eod = id_of("eos_token");
    special_ids_.sep = id_of("sep_token");
    special_ids_.cls = id_of("cls_token");
    special_ids_.pad = id_of("pad_token");
    special_ids_.mask = id_of("mask_token");
    unk_ = id_of("unk_token");
    const std::vector<std::string> additional =
        options.special_tokens.value_or(std::vector<std::string>{});
    identity_ = core_v0_19_identity(options, options.tokenizer_model,
                                    transformers_kwargs(options, additional, true));
    for (const std::string& token : additional)
        additional_.emplace_back(token, *token_id(spec, token));
}

std::string CoreHfTokenizer::decode(std::span<const int32_t> ids) const {
    if (include_special_tokens_) return tokenizer_.decode(ids);
    return decode_without_special_tokens(ids);
}

int32_t CoreHfTokenizer::token_to_id(std::string_view token) const {
    if (const std::optional<int32_t> id = tokenizer_.token_id(token)) return *id;
    MT_CHECK(unk_.has_value(), "HuggingFaceTokenizer: the token '", token.substr(0, 200),
             "' is not in the vocabulary, and the tokenizer has no unknown token to stand for it");
    return *unk_;
}

std::string CoreHfTokenizer::decode_without_special_tokens(std::span<const int32_t> ids) const {
    std::vector<int32_t> kept;
    for (const int32_t id : ids)
        if (!special_.count(id)) kept.push_back(id);
    return tokenizer_.decode(kept);
}

}  // namespace mt::plugins::hf_tokenizer
