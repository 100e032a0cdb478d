// Dynamic batching of POST /completions for models that cannot run a continuous batch
// (CompletionEngine; T5, MoE with an expert capacity): requests that arrive while the model is
// busy wait in a queue, and when the worker thread reaches one it takes the compatible others
// queued by then (greedy ones, prompts of similar length, up to kMaxBatchRequests) into the same
// batch. Each gets what it gets alone (the rows of a batch do not see each other). A request
// that arrives while a batch runs waits for the next one.
#pragma once

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "completion.h"

namespace mt::generate_tool {

// Megatron's --inference-max-requests default.
inline constexpr size_t kMaxBatchRequests = 8;
// Rows whose prompt lengths differ by more wait for another batch: a longer prompt's extra
// tokens are read one decode step at a time, which costs more than a batch saves.
inline constexpr size_t kMaxBatchPromptSpread = 32;

class CompletionBatcher {
  public:
    // One queued request and, once its batch has run, its result or error.
    class Ticket {
      public:
        const CompletionRequest& request() const { return request_; }
        // How many requests its batch ran (0: not run yet).
        size_t batch_size() const { return batch_size_; }

      private:
        friend class CompletionBatcher;
        explicit Ticket(CompletionRequest request) : request_(std::move(request)) {}
        CompletionRequest request_;
        std::optional<CompletionResult> result_;
        std::exception_ptr error_;
        size_t batch_size_ = 0;
    };

    explicit CompletionBatcher(TextGenerator& generator) : generator_(generator) {}

    // Queues a request whose prompts are token ids (tokenize_prompts).
    std::shared_ptr<Ticket> queue(CompletionRequest request);

    // On the worker thread: the ticket's result, running its batch first unless an earlier
    // batch took it; its batch's mt::Error is rethrown.
    CompletionResult result(const std::shared_ptr<Ticket>& ticket);

  private:
    TextGenerator& generator_;
    std::mutex mutex_;
    std::deque<std::shared_ptr<Ticket>> queued_;
};

}  // namespace mt::generate_tool
