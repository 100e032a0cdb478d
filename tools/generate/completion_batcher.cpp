#include "completion_batcher.h"

#include <algorithm>

namespace mt::generate_tool {

namespace {

// The shortest and longest prompt of a request.
std::pair<size_t, size_t> prompt_lengths(const CompletionRequest& r) {
    size_t lo = SIZE_MAX, hi = 0;
    for (const auto& prompt : r.prompts) {
        const size_t n = std::get<std::vector<int32_t>>(prompt).size();
        lo = std::min(lo, n);
        hi = std::max(hi, n);
    }
    return {lo, hi};
}

}  // namespace

std::shared_ptr<CompletionBatcher::Ticket> CompletionBatcher::queue(CompletionRequest request) {
    std::shared_ptr<Ticket> ticket(new Ticket(std::move(request)));
    std::lock_guard lock(mutex_);
    queued_.push_back(ticket);
    return ticket;
}

CompletionResult CompletionBatcher::result(const std::shared_ptr<Ticket>& ticket) {
    if (!ticket->result_ && !ticket->error_) {
        // This ticket and the queued ones that fit with it, in arrival order.
        std::vector<std::shared_ptr<Ticket>> batch{ticket};
        {
            std::lock_guard lock(mutex_);
            std::erase(queued_, ticket);
            auto [lo, hi] = prompt_lengths(ticket->request_);
            for (auto it = queued_.begin();
                 it != queued_.end() && batch.size() < kMaxBatchRequests;) {
                const auto [l, h] = prompt_lengths((*it)->request_);
                if (can_join_a_batch(ticket->request_) && can_join_a_batch((*it)->request_) &&
                    std::max(hi, h) - std::min(lo, l) <= kMaxBatchPromptSpread) {
                    lo = std::min(lo, l);
                    hi = std::max(hi, h);
                    batch.push_back(*it);
                    it = queued_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        std::vector<const CompletionRequest*> requests;
        for (const auto& t : batch) {
            requests.push_back(&t->request_);
            t->batch_size_ = batch.size();
        }
        try {
            std::vector<CompletionResult> results = complete_batch(generator_, requests);
            for (size_t i = 0; i < batch.size(); ++i) batch[i]->result_ = std::move(results[i]);
        } catch (...) {
            // A batch that fails is tried again one request at a time, so that one bad request
            // (too long for the model, ...) does not fail the others.
            if (batch.size() == 1) {
                ticket->error_ = std::current_exception();
            } else {
                for (const auto& t : batch) {
                    const CompletionRequest* one = &t->request_;
                    t->batch_size_ = 1;
                    try {
                        t->result_ = std::move(complete_batch(generator_, std::span(&one, 1))[0]);
                    } catch (...) {
                        t->error_ = std::current_exception();
                    }
                }
            }
        }
    }
    if (ticket->error_) std::rethrow_exception(ticket->error_);
    return std::move(*ticket->result_);
}

}  // namespace mt::generate_tool
