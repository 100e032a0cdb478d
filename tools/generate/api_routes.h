// What megatron-generate's server answers, apart from HTTP itself: Megatron's PUT /api, its
// POST /completions (also as /v1/completions, where OpenAI's clients look), GET /v1/models, and
// vLLM's tokenizer endpoints. A request is checked on the I/O thread; what needs the model or the
// tokenizer becomes a job for the one worker thread, which runs them in arrival order;
// completions join a continuous batch (CompletionEngine) on a model that can run one, else the
// ones queued together share a batch (CompletionBatcher).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "chat_completion.h"
#include "chat_prompt.h"
#include "completion_batcher.h"
#include "completion_engine.h"
#include "text_generation.h"

namespace mt::generate_tool {

struct ApiAnswer {
    unsigned status = 200;
    std::string body;
    const char* content_type = "application/json";
    const char* allow = nullptr;  // the Allow header of a 405
};

using ApiJob = std::function<ApiAnswer()>;  // run on the worker thread

// Sends one piece of a streamed answer; false once the client has gone.
using ChunkSink = std::function<bool(std::string chunk)>;
// A streamed answer (server-sent events), run on the worker thread: it sends its events and
// returns nullopt, or returns the answer to give instead when it fails before sending any.
using ApiStreamJob = std::function<std::optional<ApiAnswer>(const ChunkSink& send)>;
// Hands over the answer once, from any thread: a whole answer, or nullopt for a stream whose
// events have been sent.
using AnswerSink = std::function<void(std::optional<ApiAnswer> answer)>;
using WorkerJob = std::function<void()>;
// A request for the continuous batch (CompletionEngine): called on the I/O thread with the
// connection's sinks, it queues the request (or answers at once through `done`) and returns the
// job the worker thread then runs to step the batch (none when it answered at once).
using ApiBatchedJob = std::function<WorkerJob(const ChunkSink& send, const AnswerSink& done)>;

class ApiRoutes {
  public:
    // `model_id`: the name GET /v1/models lists and responses carry (the --load path); `chat`
    // renders chat messages.
    // `max_requests`: the sequences a continuous batch decodes together (for a model that can
    // run one; others batch the requests queued together), `queue_timeout` how long a request
    // may wait for a place in it.
    ApiRoutes(TextGenerator& generator, std::string model_id, ChatPrompt chat,
              const BatchLimits& batch, std::chrono::milliseconds queue_timeout);

    // The answer at once (an unknown path, a wrong method, a malformed body), or the job.
    std::variant<ApiAnswer, ApiJob, ApiStreamJob, ApiBatchedJob> route(std::string_view method,
                                                                       std::string_view path,
                                                                       std::string body,
                                                                       const std::string& remote);

    // Ends the continuous batch after its running step (the server is stopping).
    void stop() {
        if (engine_) engine_->stop();
    }
    // Once the worker has stopped: drops the batch's requests unanswered.
    void drop_requests() {
        if (engine_) engine_->drop_requests();
    }
    // A worker job that runs the model outside the continuous batch (PUT /api; without a batch
    // every job, returned as it is): from now on the batch admits no request and drains, so that
    // the job runs next rather than after the requests that keep arriving; the batch resumes once
    // the job has run. Called on the I/O thread when the job is handed to the worker.
    WorkerJob outside_batch(WorkerJob job);

    // For the server's start line.
    static constexpr const char* kSummary =
        "PUT /api, POST /completions and /v1/completions, POST /v1/chat/completions, GET "
        "/v1/models, GET /tokenizer_info, POST /tokenize and /detokenize";

  private:
    // The events of a streamed completion (`chat`: chat.completion.chunk ones) of `request`.
    ApiStreamJob stream_job(CompletionRequest request, std::string id, bool chat);
    // The request (streamed or not; `chat`: answered in the chat shape, with `logprobs`) for
    // the continuous batch.
    ApiBatchedJob batched_job(CompletionRequest request, std::string id, bool chat,
                              ChatLogprobs logprobs);
    // A tokenizer request's job: on the worker, between two steps of the continuous batch when
    // there is one.
    std::variant<ApiAnswer, ApiJob, ApiStreamJob, ApiBatchedJob> tokenizer_job(ApiJob job);

    TextGenerator& generator_;
    const ChatPrompt chat_;
    CompletionBatcher batcher_{generator_};
    std::optional<CompletionEngine> engine_;  // for a model that decodes rows
    const std::string model_id_;
    const int64_t created_;  // the server's start, as the model's "created"
    std::atomic<uint64_t> next_id_{0};
};

}  // namespace mt::generate_tool
