#include "mt/tokenizer.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "mt/error.h"
#include "mt/text/python_repr.h"

namespace mt {

TokenizerIdentity core_v0_19_identity(const TokenizerOptions& options,
                                      std::optional<std::string> path,
                                      std::vector<std::pair<std::string, std::string>> kwargs) {
    TokenizerIdentity id{options.core_class, {std::move(path)}, std::move(kwargs)};
    id.single_path = true;
    return id;
}

std::vector<std::pair<std::string, std::string>> transformers_kwargs(
    const TokenizerOptions& options, const std::vector<std::string>& additional,
    bool hugging_face) {
    const auto path_or_none = [](const std::string& p) { return p.empty() ? "None" : p; };
    std::vector<std::pair<std::string, std::string>> kwargs;
    if (hugging_face)
        kwargs.emplace_back("chat_template", "None");
    else
        kwargs.emplace_back("additional_special_tokens", text::python_repr(additional));
    kwargs.emplace_back("vocab_file", path_or_none(options.vocab_file));
    kwargs.emplace_back("merges_file", path_or_none(options.merge_file));
    if (hugging_face)
        kwargs.emplace_back("additional_special_tokens", text::python_repr(additional));
    kwargs.emplace_back("use_fast", "True");
    kwargs.emplace_back("trust_remote_code", text::python_bool(options.trust_remote_code));
    kwargs.emplace_back("include_special_tokens",
                        text::python_bool(options.hf_include_special_tokens));
    return kwargs;
}

int32_t Tokenizer::require(const std::optional<int32_t>& id, const char* what) const {
    MT_CHECK(id.has_value(), name(), " has no ", what, " token");
    return *id;
}

TokenizerIdentity Tokenizer::dataset_identity() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: training data read with the ",
            name(), " tokenizer (its dataset cache identity)");
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: the id of the token '",
            token.substr(0, 100), "' (core_v0.19's tokens_to_ids) with the ", name(), " tokenizer");
}

std::string Tokenizer::decode_without_special_tokens(std::span<const int32_t>) const {
    MT_FAIL("--tokenizer-type ", name(),
            ": not supported yet: text without the special tokens "
            "(core_v0.19's ids_to_text(remove_special_tokens=True)) with the ",
            name(), " tokenizer");
}

std::vector<std::string> Tokenizer::vocabulary() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: the ", name(),
            " tokenizer's vocabulary text (inv_vocab)");
}

std::vector<int32_t> sentinel_ids(const Tokenizer& tokenizer) {
    std::unordered_map<std::string, int32_t> id_of;
    const std::vector<std::string> pieces = tokenizer.vocabulary();
    for (size_t id = 0; id < pieces.size(); ++id) id_of.emplace(pieces[id], int32_t(id));
    std::vector<int32_t> out;
    for (size_t n = 0;; ++n) {
        const auto it = id_of.find("<extra_id_" + std::to_string(n) + ">");
        if (it == id_of.end()) return out;
        out.push_back(it->second);
    }
}

}  // namespace mt
