// The body of POST /v1/chat/completions (OpenAI's chat API, which Megatron core_v0.19's dynamic
// server answers): the messages and tools as the chat template will see them, the template's
// extra variables, and the generation as a completion request once the prompt is rendered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "completion_request.h"

namespace mt::generate_tool {

struct ChatRequest {
    std::string messages_json;                // the "messages" array, as sent
    std::optional<std::string> tools_json;    // the "tools" array, as sent
    std::string template_kwargs_json = "{}";  // "chat_template_kwargs", as sent
    bool add_bos = false;                     // Megatron's add_BOS
    bool logprobs = false;                    // the chosen tokens' log-probs
    // The generation; prompts filled in from the rendered messages. max_tokens is nullopt when
    // not given: up to the model's positions.
    CompletionRequest completion;
    std::optional<int64_t> max_tokens;
};

// The request, or the message a malformed one is answered with (HTTP 400).
std::variant<ChatRequest, std::string> parse_chat_request(std::string_view body);

}  // namespace mt::generate_tool
