// Continuous batching of the OpenAI-style requests (completions and chat, streamed or not) on a
// model that decodes rows (Model::can_decode_rows): a request is handed over on the I/O thread
// (queue) and joins the running batch at its next step; the worker thread steps the batch (run)
// until nothing is left. Each prompt of a request is one sequence of the batch with its own
// state and random stream, so a request gets what it gets alone; it is answered when its last
// sequence ends, while the others go on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>

#include "completion_request.h"
#include "mt/infer/continuous_batch.h"
#include "text_generation.h"

namespace mt::generate_tool {

// The server is full: answered 503 (retry later).
struct ServerBusy : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Sequences queued beyond the running ones before new requests are answered 503.
inline constexpr size_t kMaxQueuedSequences = 1024;
// Prompt tokens one step reads (chunked prefill): GPT-2 small reads 512 in about half a second
// on 2 cores, which the decoding rows wait; several prompts read together make the products
// wider, which a CPU runs about twice as fast per token as one 128-token prompt.
inline constexpr int64_t kPrefillTokens = 512;

// The continuous batch's bounds.
struct BatchLimits {
    size_t max_requests = 8;  // --inference-max-requests: sequences decoded together
    // --inference-dynamic-batching-buffer-size-gb: the bytes their states (KV caches) hold
    // together, each reserving its prompt + max_tokens positions (0: no bound).
    int64_t memory_bytes = 0;
};

class CompletionEngine {
  public:
    // Called on the worker thread.
    struct Handlers {
        std::function<bool(int32_t id)> on_token;  // the first prompt's ids as they come
        std::function<void(infer::GenerationResult rows)> done;  // one row per prompt
        std::function<void(std::exception_ptr error)> fail;
    };

    // A request still queued after `queue_timeout` fails with ServerBusy; one whose state
    // alone needs more than limits.memory_bytes fails with its mt::Error.
    CompletionEngine(TextGenerator& generator, const BatchLimits& limits,
                     std::chrono::milliseconds queue_timeout = std::chrono::minutes(5));

    // Whether the generator's model can run a continuous batch.
    static bool supports(const TextGenerator& generator) {
        return generator.model().can_decode_rows();
    }

    // Thread-safe. mt::Error for a request the model cannot run, ServerBusy when the queue is
    // full; nothing is queued then.
    void queue(const CompletionRequest& request, Handlers handlers);
    // On the worker thread: steps the batch, running the jobs queued between steps and taking in
    // the requests queued (not while held), until nothing is queued or running (held: running),
    // or stop() was called.
    void run();
    // Thread-safe: run() returns after its running step, now and ever after.
    void stop() { stopping_ = true; }
    // Thread-safe: `job` runs on the worker thread in run(), before its next step (a tokenizer
    // request: it neither waits for the batch to drain nor drains it). Whoever queues one also
    // hands the worker a run().
    void between_steps(std::function<void()> job);
    // Thread-safe: while held (by each hold() not yet released), run() admits no queued request
    // and returns once the running ones are done: another job waits for the worker thread.
    void hold() { ++held_; }
    void release() { --held_; }
    // Not while run() runs: every queued and running request dropped unanswered.
    void drop_requests();

  private:
    infer::ContinuousBatch batch_;
    std::mutex mutex_;
    struct Queued {
        infer::SequenceRequest sequence;
        std::chrono::steady_clock::time_point since;
    };
    std::chrono::milliseconds queue_timeout_;
    std::deque<Queued> queued_;
    std::deque<std::function<void()>> between_steps_;
    uint64_t next_seed_;  // unseeded requests' streams
    std::atomic<bool> stopping_{false};
    std::atomic<int> held_{0};
};

}  // namespace mt::generate_tool
