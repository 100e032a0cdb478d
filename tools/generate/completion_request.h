// The body of POST /completions (OpenAI's completions API, which Megatron-LM core_v0.13 serves
// beside PUT /api as MegatronCompletions): prompts as text or token ids, max_tokens, sampling,
// top-n logprobs, echo, stop strings and seed, checked before anything is allocated or queued.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "json_fields.h"
#include "mt/infer/sampler.h"

namespace mt::generate_tool {

// Megatron's bounds: 128 prompts a request (PUT /api's), 10 top log-probs (its completions').
inline constexpr size_t kMaxCompletionPrompts = 128;
inline constexpr int64_t kMaxTopLogprobs = 10;

struct CompletionRequest {
    // Each prompt as text, or as token ids, which are kept as the client sent them (Megatron
    // detokenizes them and tokenizes the text again, which need not give the same ids).
    std::vector<std::variant<std::string, std::vector<int32_t>>> prompts;
    int64_t max_tokens = 16;  // OpenAI's default; 0 scores the prompt (needs echo)
    // temperature 0 is greedy (top_k 1), as Megatron maps it; top_p 1 keeps every token.
    infer::SamplingParams sampling;
    int64_t logprobs = 0;  // the top-n log-probs at each token, n <= kMaxTopLogprobs
    bool echo = false;     // the prompt's tokens and log-probs come first in each choice
    std::optional<std::vector<std::string>> stop;  // absent: the end-of-document token's text
    std::optional<uint64_t> seed;
    bool stream = false;        // server-sent events as the text comes (one prompt)
    bool stream_usage = false;  // stream_options.include_usage: a last event with the usage
};

// The fields POST /completions and POST /v1/chat/completions share (temperature, top_p, top_k,
// stop, seed, n, stream, stream_options, the refused penalties and logit_bias) into `r`, or the
// message.
std::optional<std::string> read_sampling_fields(const json::Fields& f, CompletionRequest& r);

// The request, or the message a malformed one is answered with (HTTP 400). Token ids must be
// below `vocab_size` (the tokenizer's).
std::variant<CompletionRequest, std::string> parse_completion_request(std::string_view body,
                                                                      int64_t vocab_size);

}  // namespace mt::generate_tool
