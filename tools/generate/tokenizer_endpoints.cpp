#include "tokenizer_endpoints.h"

#include <algorithm>

#include "json_fields.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"

namespace mt::generate_tool {

namespace {

using namespace json;

// What the tokenizer adds to any text by itself (a Hugging Face tokenizer's BOS, ...): its ids
// for the empty text.
std::vector<int32_t> added_ids(const Tokenizer& tokenizer) {
    try {
        return tokenizer.encode("");
    } catch (const mt::Error&) {  // a tokenizer that reads no text (NullTokenizer's numbers)
        return {};
    }
}

}  // namespace

std::variant<TokenizeRequest, std::string> parse_tokenize_request(std::string_view body) {
    return read_object(body, [](const Fields& f) -> std::variant<TokenizeRequest, std::string> {
        TokenizeRequest r;
        auto prompt = f.given("prompt");
        if (!prompt || prompt->type() != element_type::STRING) return "prompt must be a string";
        r.prompt = std::string(std::string_view(*prompt));
        if (auto e = f.given("add_special_tokens")) {
            if (!is_bool(*e)) return "add_special_tokens must be a boolean value";
            r.add_special_tokens = bool(*e);
        }
        if (f.has("messages")) return "not supported yet: messages (chat templates) on /tokenize";
        return r;
    });
}

std::variant<std::vector<int32_t>, std::string> parse_detokenize_request(std::string_view body,
                                                                         int64_t vocab_size) {
    return read_object(
        body, [&](const Fields& f) -> std::variant<std::vector<int32_t>, std::string> {
            auto tokens = f.given("tokens");
            if (!tokens || tokens->type() != element_type::ARRAY)
                return "tokens must be a list of token ids";
            return read_token_ids(simdjson::dom::array(*tokens), vocab_size, "tokens");
        });
}

std::string tokenize_response(const Tokenizer& tokenizer, const TokenizeRequest& r,
                              int64_t max_model_len) {
    std::vector<int32_t> ids = tokenizer.encode(r.prompt);
    if (!r.add_special_tokens) {
        const std::vector<int32_t> added = added_ids(tokenizer);
        if (!added.empty() && ids.size() >= added.size() &&
            std::equal(added.begin(), added.end(), ids.begin()))
            ids.erase(ids.begin(), ids.begin() + ptrdiff_t(added.size()));
    }
    io::JsonWriter w;
    w.begin_object().key("count").value(int64_t(ids.size()));
    w.key("max_model_len").value(max_model_len).key("tokens").begin_array();
    for (int32_t id : ids) w.value(int64_t(id));
    w.end_array().end_object();
    return w.str();
}

std::string detokenize_response(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
    io::JsonWriter w;
    w.begin_object().key("prompt").value(tokenizer.decode(ids)).end_object();
    return w.str();
}

std::string tokenizer_info_response(const Tokenizer& tokenizer, int64_t eod,
                                    int64_t model_max_length) {
    const auto text_of = [&](int32_t id) { return tokenizer.decode(std::span(&id, 1)); };
    io::JsonWriter w;
    w.begin_object().key("tokenizer_class").value(tokenizer.name());
    w.key("eos_token").value(text_of(int32_t(eod)));
    if (const auto bos = tokenizer.special_ids().bos) w.key("bos_token").value(text_of(*bos));
    w.key("model_max_length").value(model_max_length).end_object();
    return w.str();
}

}  // namespace mt::generate_tool
