// The REST server of megatron-generate on Boost.Beast: Megatron's `PUT /api` and
// `POST /completions` and the other paths of ApiRoutes. Requests are validated on the I/O thread
// and then run on one worker thread: PUT /api one request at a time (Megatron's LOCK),
// completions in a continuous batch that requests join as they come (or, for a model that
// cannot run one, batches of those queued together); a streamed answer's events are written as
// the worker makes them. A
// bad request gets HTTP 400 with its message and the server carries on.
// Slow or idle clients cannot hold it: each request must arrive whole within a deadline, and
// connections beyond a bound are answered 503 at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "chat_prompt.h"
#include "completion_engine.h"
#include "text_generation.h"

namespace mt::generate_tool {

struct ApiServerLimits {
    // Open connections served at once (reading, queued for generation, or writing); one more is
    // answered 503 and closed.
    size_t max_connections = 256;
    // From the first byte awaited (a new connection, or keep-alive after a response) to the
    // whole request read: a client that trickles its request slower is disconnected.
    std::chrono::milliseconds request_timeout{10'000};
    // Writing one response to the client.
    std::chrono::milliseconds write_timeout{60'000};
    size_t body_limit = size_t(16) << 20;  // larger bodies are answered 413
    // A completion still waiting for a place in the continuous batch after this long is
    // answered 503.
    std::chrono::milliseconds queue_timeout{300'000};

    // The defaults, with MT_API_MAX_CONNECTIONS, MT_API_REQUEST_TIMEOUT and MT_API_QUEUE_TIMEOUT
    // (seconds, may be fractional) from the environment when set (for tests and operators; not
    // Megatron flags).
    static ApiServerLimits from_environment();
};

// Serves until the process is stopped (SIGINT / SIGTERM end it cleanly). port 0 picks a free
// port; the chosen one is printed ("Serving on http://HOST:PORT (PUT /api, ...)"). `model_id`
// names the model to OpenAI's clients; `chat` renders chat messages; `batch` bounds the
// continuous batch.
void serve_api(TextGenerator& generator, const std::string& model_id, ChatPrompt chat,
               const std::string& host, int port, const BatchLimits& batch,
               const ApiServerLimits& limits = ApiServerLimits::from_environment());

}  // namespace mt::generate_tool
