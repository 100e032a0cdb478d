// POST /v1/chat/completions' answers in OpenAI's chat shape: a "chat.completion" with the
// assistant's message (and the chosen tokens' log-probs as the chat API lays them out), or, for a
// streamed request, "chat.completion.chunk" events whose deltas put the message together.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "completion.h"

namespace mt::generate_tool {

// Megatron's inference context length (--inference-max-seq-length's default): a chat request
// without max_tokens generates up to it, or to the model's positions if fewer.
inline constexpr int64_t kChatContextLength = 2560;

// What a chat request asked to see of log-probs: the chosen tokens', and this many of the most
// likely ones at each.
struct ChatLogprobs {
    bool chosen = false;
    int64_t top = 0;
};

// The whole answer, from the completion of the rendered prompt.
std::string chat_response(const CompletionResult& result, ChatLogprobs logprobs,
                          const std::string& id, const std::string& model, int64_t created);

// One streamed event's JSON: a delta of `content` (the first also names the role), or the last,
// with its finish reason and an empty delta.
std::string chat_chunk(std::string_view id, std::string_view model, int64_t created,
                       std::string_view content, bool first, const char* finish_reason);

}  // namespace mt::generate_tool
