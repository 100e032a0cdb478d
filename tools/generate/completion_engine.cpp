#include "completion_engine.h"

#include <memory>
#include <utility>

namespace mt::generate_tool {

namespace {

// A request's sequences' rows, gathered as they end.
struct Gathered {
    CompletionEngine::Handlers handlers;
    infer::GenerationResult rows;
    size_t left = 0;
    bool failed = false;
};

}  // namespace

CompletionEngine::CompletionEngine(TextGenerator& generator, const BatchLimits& limits,
                                   std::chrono::milliseconds queue_timeout)
    : batch_(generator.model(), generator.generation_tokens(), limits.max_requests, kPrefillTokens,
             limits.memory_bytes),
      queue_timeout_(queue_timeout),
      next_seed_(generator.seed() ^ 0x9E3779B97F4A7C15ull) {}

void CompletionEngine::queue(const CompletionRequest& r, Handlers handlers) {
    auto gathered = std::make_shared<Gathered>();
    const size_t n = r.prompts.size();
    gathered->handlers = std::move(handlers);
    gathered->rows.tokens.resize(n);
    gathered->rows.log_probs.resize(n);
    if (r.logprobs > 0) gathered->rows.top_log_probs.resize(n);
    gathered->left = n;

    std::vector<infer::SequenceRequest> sequences;
    for (size_t p = 0; p < n; ++p) {
        infer::SequenceRequest s;
        s.prompt = std::get<std::vector<int32_t>>(r.prompts[p]);
        s.max_tokens = r.max_tokens;
        s.sampling = r.sampling;
        s.prompt_log_probs = r.echo;
        s.top_n_log_probs = r.logprobs;
        batch_.check(s);
        if (p == 0) s.on_token = gathered->handlers.on_token;
        s.on_done = [gathered, p](infer::GenerationResult row) {
            Gathered& g = *gathered;
            g.rows.tokens[p] = std::move(row.tokens[0]);
            g.rows.log_probs[p] = std::move(row.log_probs[0]);
            if (!row.top_log_probs.empty())
                g.rows.top_log_probs[p] = std::move(row.top_log_probs[0]);
            if (--g.left == 0 && !g.failed) g.handlers.done(std::move(g.rows));
        };
        s.on_error = [gathered](std::exception_ptr error) {
            --gathered->left;
            if (!std::exchange(gathered->failed, true)) gathered->handlers.fail(error);
        };
        sequences.push_back(std::move(s));
    }
    std::lock_guard lock(mutex_);
    if (queued_.size() + n > kMaxQueuedSequences)
        throw ServerBusy("the server is busy (" + std::to_string(queued_.size()) +
                         " prompts queued); try again later");
    // A seeded request replays (prompt p: seed + p), an unseeded one draws its own streams.
    const uint64_t seed = r.seed ? *r.seed : std::exchange(next_seed_, next_seed_ + n);
    const auto now = std::chrono::steady_clock::now();
    for (size_t p = 0; p < n; ++p) {
        sequences[p].seed = seed + p;
        queued_.push_back({std::move(sequences[p]), now});
    }
}

void CompletionEngine::between_steps(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    between_steps_.push_back(std::move(job));
}

void CompletionEngine::drop_requests() {
    std::lock_guard lock(mutex_);
    queued_.clear();
    between_steps_.clear();
    batch_.clear();
}

void CompletionEngine::run() {
    while (!stopping_) {
        std::deque<std::function<void()>> jobs;
        {
            std::lock_guard lock(mutex_);
            jobs.swap(between_steps_);
        }
        for (auto& job : jobs) job();
        if (held_ == 0) {
            std::lock_guard lock(mutex_);
            const auto now = std::chrono::steady_clock::now();
            // In arrival order, while places and memory last.
            while (!queued_.empty()) {
                infer::SequenceRequest& s = queued_.front().sequence;
                std::exception_ptr refused;
                if (now - queued_.front().since > queue_timeout_) {
                    refused = std::make_exception_ptr(
                        ServerBusy("the request waited longer than " +
                                   std::to_string(queue_timeout_.count() / 1000) +
                                   " s for a place in the batch; try again later"));
                } else {
                    try {
                        if (!batch_.add(s)) break;
                    } catch (...) {  // a request too large for the batch's memory
                        refused = std::current_exception();
                    }
                }
                if (refused && s.on_error) s.on_error(refused);
                queued_.pop_front();
            }
        }
        if (batch_.idle()) return;
        batch_.step();
    }
}

}  // namespace mt::generate_tool
