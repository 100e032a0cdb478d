// Streaming one completion as it is generated (OpenAI's "stream": true): after each decoding step
// the text that can no longer change is handed on. Text is held back while it ends inside a
// character (or in a replacement character a later byte may complete) or could be the start of a
// stop string, so that the pieces put together are the text the request gets unstreamed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "completion_request.h"
#include "text_generation.h"

namespace mt::generate_tool {

struct StreamedCompletion {
    const char* finish_reason = "length";  // "stop": a stop string or the end-of-document token
    int64_t prompt_tokens = 0, completion_tokens = 0;
    bool client_left = false;  // `send` said so; the generation stopped there
};

// One streamed completion's text (one prompt of token ids, no echo or log-probs): each generated
// id in, each settled piece of the text out to `send` (which returns false when the client has
// gone), cut where the unstreamed answer cuts it (after the prompt's text, before a stop string
// or the end-of-document token). mt::Error for a request that cannot stream.
class CompletionStreamer {
  public:
    CompletionStreamer(const Tokenizer& tokenizer, int32_t eod, const CompletionRequest& request,
                       std::function<bool(std::string_view piece)> send);
    // The next generated id; false once nothing more is wanted (the text stopped, or the client
    // left).
    bool add(int32_t id);
    // After the last id: what had not settled, and the summary.
    StreamedCompletion finish();

  private:
    // Hands on what has settled (all of it when last); false once there is nothing more to do.
    bool pass_on(bool last);

    const Tokenizer& tokenizer_;
    int32_t eod_;
    std::vector<std::string> stops_;
    std::vector<int32_t> ids_;
    size_t prompt_length_;
    std::function<bool(std::string_view piece)> send_;
    StreamedCompletion out_;
    std::optional<size_t> text_start_;  // where the generation's text begins (the first step's)
    size_t sent_ = 0;                   // bytes of the generation's text handed on
};

// Generates `request` (one prompt of token ids, no echo or log-probs) and passes each new piece
// of its text to `send`, which returns false when the client has gone. mt::Error before anything
// is sent for a request the model cannot run.
StreamedCompletion stream_completion(TextGenerator& generator, const CompletionRequest& request,
                                     const std::function<bool(std::string_view piece)>& send);

// The end of the generated text that later tokens cannot change: not inside a character that has
// not arrived whole, nor on a trailing U+FFFD (a tokenizer's stand-in for bytes it has not seen
// complete), nor on a proper start of one of `stops`.
size_t settled_end(std::string_view text, const std::vector<std::string>& stops);

// A streamed POST /completions event's JSON ("text_completion" with one choice's new text; the
// last has the finish reason).
std::string completion_chunk(std::string_view id, std::string_view model, int64_t created,
                             std::string_view text, const char* finish_reason);
// The event stream_options.include_usage asks for after the last: no choices, the usage.
std::string usage_chunk(std::string_view id, std::string_view object, std::string_view model,
                        int64_t created, const StreamedCompletion& done);

// Server-sent events: one "data: <json>" event, and the stream's last.
std::string sse_event(std::string_view json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace mt::generate_tool
