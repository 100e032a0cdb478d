// Megatron's `PUT /api` request body: the JSON fields of text_generation_server.py checked in
// its order and with its messages, into a TextRequest; and the response body (text, tokens,
// logprobs when asked, segments), as Megatron-LM core_v0.13's server returns it.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "text_generation.h"

namespace mt::generate_tool {

struct ApiRequest {
    TextRequest request;
    bool no_log = false;
};

// The request, or the message Megatron answers a malformed one with (sent with HTTP 400).
std::variant<ApiRequest, std::string> parse_api_request(std::string_view body);

// {"text": [...], "tokens": [[...]], "logprobs": [[...]] (if asked), "segments": [[...]]}
std::string api_response(const TextResult& result, bool logprobs);

}  // namespace mt::generate_tool
