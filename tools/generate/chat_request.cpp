// POST /v1/chat/completions validation: messages must be a non-empty list of objects with a
// string role (their content and other fields are the template's business), the sampling fields
// as /completions reads them, max_tokens or max_completion_tokens, logprobs and top_logprobs as
// the chat API names them; what we do not do (n > 1, tool-call parsing, structured output) is
// refused by name.
#include "chat_request.h"

#include "json_fields.h"

namespace mt::generate_tool {

namespace {

using namespace json;

std::optional<std::string> read_messages(element messages, ChatRequest& r) {
    if (messages.type() != element_type::ARRAY) return "'messages' must be a list";
    simdjson::dom::array items(messages);
    if (items.size() == 0) return "Missing 'messages' field";
    size_t index = 0;
    for (element m : items) {
        element role;
        if (m.type() != element_type::OBJECT || simdjson::dom::object(m).at_key("role").get(role) ||
            role.type() != element_type::STRING)
            return mt::str("messages[", index, "] must be an object with a string 'role'");
        ++index;
    }
    r.messages_json = simdjson::minify(messages);
    return std::nullopt;
}

std::variant<ChatRequest, std::string> validate(const Fields& f) {
    ChatRequest r;
    auto messages = f.given("messages");
    if (!messages) return "Missing 'messages' field";
    if (auto message = read_messages(*messages, r)) return *message;
    for (const char* name : {"max_completion_tokens", "max_tokens"}) {
        auto e = f.given(name);
        if (!e) continue;
        if (!is_int(*e) || integer(*e) < 1) return mt::str(name, " must be an integer >= 1");
        r.max_tokens = integer(*e);
        break;
    }
    if (auto message = read_sampling_fields(f, r.completion)) return *message;
    if (auto e = f.given("logprobs")) {
        if (!is_bool(*e)) return "logprobs must be a boolean value";
        r.logprobs = bool(*e);
    }
    if (auto e = f.given("top_logprobs")) {
        if (!is_int(*e) || integer(*e) < 0) return "top_logprobs must be an integer >= 0";
        if (integer(*e) > kMaxTopLogprobs) return "return_topk_logprobs > 10 not supported";
        if (integer(*e) > 0 && !r.logprobs) return "top_logprobs needs logprobs: true";
        r.completion.logprobs = integer(*e);
    }
    if (r.completion.stream && r.logprobs) return "not supported yet: stream with logprobs";
    if (auto e = f.given("tools")) {
        if (e->type() != element_type::ARRAY) return "tools must be a list";
        r.tools_json = simdjson::minify(*e);
    }
    if (auto e = f.given("tool_choice");
        e && !(e->type() == element_type::STRING &&
               (std::string_view(*e) == "none" || std::string_view(*e) == "auto")))
        return "not supported yet: tool_choice other than \"auto\" or \"none\" (tool calls are "
               "not parsed from the generated text)";
    if (auto e = f.given("chat_template_kwargs")) {
        if (e->type() != element_type::OBJECT) return "chat_template_kwargs must be an object";
        r.template_kwargs_json = simdjson::minify(*e);
    }
    if (auto e = f.given("add_BOS")) {
        if (!is_bool(*e)) return "add_BOS must be a boolean value";
        r.add_bos = bool(*e);
    }
    if (auto e = f.given("response_format")) {
        element type;
        if (e->type() != element_type::OBJECT ||
            simdjson::dom::object(*e).at_key("type").get(type) ||
            type.type() != element_type::STRING || std::string_view(type) != "text")
            return "not supported yet: response_format other than {\"type\": \"text\"}";
    }
    return r;
}

}  // namespace

std::variant<ChatRequest, std::string> parse_chat_request(std::string_view body) {
    return read_object(body, [](const Fields& f) { return validate(f); });
}

}  // namespace mt::generate_tool
