// Running a POST /completions request: the prompts generated in one batch, each row cut at its
// own max_tokens and at the first stop string, and shaped as OpenAI's choices: the text, each
// token with its log-prob, the top-n log-probs and its character offset in the text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "completion_request.h"
#include "text_generation.h"

namespace mt::generate_tool {

struct CompletionChoice {
    std::string text;  // the completion (after the prompt's text, or with it under echo)
    std::vector<std::string> tokens;  // each token detokenized alone
    // null for the first token of a sequence (nothing predicts it)
    std::vector<std::optional<float>> token_logprobs;
    // per token, the most likely tokens there as (text, log-prob), most likely first; a text
    // two ids share appears once (the likelier); empty unless logprobs were asked for
    std::vector<std::optional<std::vector<std::pair<std::string, float>>>> top_logprobs;
    std::vector<int64_t> text_offset;      // in characters (code points) from the prompt's start
    const char* finish_reason = "length";  // "stop": a stop string or the end-of-document token
};

struct CompletionResult {
    std::vector<CompletionChoice> choices;
    int64_t prompt_tokens = 0, completion_tokens = 0;
};

// The text prompts of `request` as token ids (mt::Error for one that gives none).
void tokenize_prompts(const Tokenizer& tokenizer, CompletionRequest& request);

// The request's stop strings: its own, or the end-of-document token's text.
std::vector<std::string> stop_strings(const Tokenizer& tokenizer, const CompletionRequest& request,
                                      int32_t eod);
// The first byte where any of `stops` (non-empty ones) begins in text[from, ...), or npos.
size_t first_stop(std::string_view text, size_t from, const std::vector<std::string>& stops);

// Whether a request may run in one batch with others, getting what it gets alone: greedy ones
// (the rows of a batch share one random stream, so sampled ones run alone).
bool can_join_a_batch(const CompletionRequest& request);

// Requests whose prompts are token ids run as one batch (one request, or several that can join
// a batch): each row stops at its own max_tokens and stop strings and reports what its request
// asked for. mt::Error for a batch the model cannot run (too long for its positions, ...).
std::vector<CompletionResult> complete_batch(TextGenerator& generator,
                                             std::span<const CompletionRequest* const> requests);

// One request's rows (prompt + generated ids, their log-probs and, with logprobs > 0, the top
// ones; as infer::generate gives them) shaped as its choices: each cut at max_tokens, the first
// stop string and the end-of-document token.
CompletionResult shape_completion(const Tokenizer& tokenizer, int32_t eod,
                                  const CompletionRequest& request, infer::GenerationResult rows);

// OpenAI's response: {"id", "object": "text_completion", "created", "model", "choices",
// "usage"}; each choice's "logprobs" always (as Megatron's), its "top_logprobs" null unless
// request.logprobs > 0.
std::string completion_response(const CompletionResult& result, const CompletionRequest& request,
                                const std::string& id, const std::string& model, int64_t created);

// Where each token of `ids` starts in decode(ids), in bytes: the length of the text the tokens
// before it decode to, as far as it agrees with the whole text and cut back to a character
// boundary (a token that completes a character split over tokens starts with that character).
std::vector<size_t> token_byte_offsets(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                                       const std::string& text, size_t from = 0);

}  // namespace mt::generate_tool
