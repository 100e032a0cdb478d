// Megatron's `PUT /api` request body: the JSON fields of text_generation_server.py checked in
// its order and with its messages, into a TextRequest; and the response body (text, tokens,
// logprobs when asked, segments), as Megatron-LM core_v0.13's server returns it; and the
// server's log entry for a request.
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

// The server's log lines for a request (Megatron prints the client's address, the body and the
// time): a body over `max_body` bytes is cut there, at a character boundary, and its size said,
// so a 16 MiB request does not flood the log.
std::string request_log_entry(const std::string& remote, std::string_view body,
                              const std::string& when, size_t max_body = 2048);

}  // namespace mt::generate_tool
